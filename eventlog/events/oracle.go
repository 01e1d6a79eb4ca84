package events

import "encoding/json"

// Event types of the oracle (docs/oracle.md):
// identities publish signed data feeds, others subscribe with a price ceiling
// and pay the publisher in credits for each version they pull. The oracle has
// no HTTP endpoint; civnode oracle is its only door.
const (
	// TypeOracleFeedPublished is a new version of a feed, signed by its
	// publisher's key.
	TypeOracleFeedPublished = "oracle.feed.published"
	// TypeOracleSubscribed is a subscription to a feed, or a new max_price
	// for an existing one.
	TypeOracleSubscribed = "oracle.subscribed"
	// TypeOracleSettled is a pull paid for: price credits move from the
	// subscriber's balance to the publisher's, the same balances mission
	// rewards are paid into.
	TypeOracleSettled = "oracle.settled"
)

// OracleFeedSigningDomain starts the bytes a feed's signature covers:
//
//	"civnode-oracle-feed-v1\n" ‖ RFC 8785 of {"feed","payload","price","publisher_did","version"}
const OracleFeedSigningDomain = "civnode-oracle-feed-v1\n"

// OracleFeedPublished is the payload of oracle.feed.published.
type OracleFeedPublished struct {
	Feed string `json:"feed"`
	// Publisher is the publishing identity's public_id when it published, and
	// PublisherDID its DID, which the signature verifies against.
	Publisher    string `json:"publisher"`
	PublisherDID string `json:"publisher_did"`
	// Version counts the feed's publications from 1.
	Version uint64 `json:"version"`
	// Price is what a subscriber pays, in credits, to pull this version.
	Price   int64           `json:"price"`
	Payload json.RawMessage `json:"payload"`
	// Signature is the standard base64 Ed25519 signature of the publisher's
	// key over OracleFeedSigningDomain and the signed object.
	Signature string `json:"signature"`
}

// OracleSubscribed is the payload of oracle.subscribed.
type OracleSubscribed struct {
	Feed          string `json:"feed"`
	Subscriber    string `json:"subscriber"`
	SubscriberDID string `json:"subscriber_did"`
	// MaxPrice is the most the subscriber pays for one version.
	MaxPrice int64 `json:"max_price"`
}

// OracleSettled is the payload of oracle.settled.
type OracleSettled struct {
	Feed          string `json:"feed"`
	Version       uint64 `json:"version"`
	Subscriber    string `json:"subscriber"`
	SubscriberDID string `json:"subscriber_did"`
	Publisher     string `json:"publisher"`
	PublisherDID  string `json:"publisher_did"`
	Price         int64  `json:"price"`
}

// FeedRef is what the write side knows of a feed: its newest version.
type FeedRef struct {
	OracleFeedPublished
	// EventID and PublishedAt are the id and timestamp of its
	// oracle.feed.published.
	EventID     string
	PublishedAt string
}

// SubscriptionRef is what the write side knows of a subscription.
type SubscriptionRef struct {
	// Current is the subscription as last recorded, with the id and
	// timestamp of that oracle.subscribed.
	Current      OracleSubscribed
	EventID      string
	SubscribedAt string
	MaxPrice     int64
	// PaidVersion is the newest version the subscriber paid for; 0 for none.
	PaidVersion uint64
}
