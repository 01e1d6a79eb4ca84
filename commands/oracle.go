package commands

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// The oracle (docs/oracle.md): identities of
// this node publish signed data feeds; others subscribe with a price ceiling
// and pay the publisher, in credits, for each version they pull. It has no
// HTTP endpoint: civnode oracle runs these commands on the data dir, or
// through the running node's oracle socket, which runs the same ones.

// OracleReader finds feeds and subscriptions; like MissionReader it must be a
// decision model (projections.Oracle's Decisions).
type OracleReader interface {
	Feed(feed string) (events.FeedRef, bool, error)
	Subscription(feed, subscriberDID string) (events.SubscriptionRef, bool, error)
}

// OracleIdentities finds identities, the salt their key is derived from, and
// their credit balance; a decision model (projections.Identities' Decisions).
type OracleIdentities interface {
	IdentityBySlug(publicID string) (events.IdentityRef, bool, error)
	// KeySalt is the key_salt of a bootstrapped identity; ok is false for an
	// identity imported with a key the node does not hold.
	KeySalt(agentDID string) (salt string, ok bool, err error)
	// Credit is the identity's credit balance.
	Credit(agentDID string) (int64, error)
}

// OracleOptions configures NewOracle; every field is required.
type OracleOptions struct {
	Log        *eventlog.Log
	NodeKey    ed25519.PrivateKey
	Feeds      OracleReader
	Identities OracleIdentities
	Auditor    TokenAuditor
}

// Oracle runs the oracle's commands. Each decides on the log's sequencer, so
// a version number is never given twice and no balance pays twice.
type Oracle struct {
	log     *eventlog.Log
	nodeKey ed25519.PrivateKey
	feeds   OracleReader
	ids     OracleIdentities
	auditor TokenAuditor
}

// NewOracle checks opts and returns the command set.
func NewOracle(opts OracleOptions) (*Oracle, error) {
	if opts.Log == nil || (len(opts.NodeKey) != ed25519.PrivateKeySize && !(opts.NodeKey == nil && opts.Log.ReadOnly())) || opts.Feeds == nil || opts.Identities == nil || opts.Auditor == nil {
		return nil, errors.New("oracle commands: Log, NodeKey, Feeds, Identities and Auditor are required")
	}
	return &Oracle{log: opts.Log, nodeKey: opts.NodeKey, feeds: opts.Feeds, ids: opts.Identities, auditor: opts.Auditor}, nil
}

// Limits of the oracle's input.
const (
	// maxFeedPayload bounds a feed's payload, which every version keeps in
	// the chain.
	maxFeedPayload = 64 << 10
	// maxOraclePrice bounds a price, like a mission's reward fields.
	maxOraclePrice = maxRewardField
)

// feedPattern is a feed's name: a slug with dots, such as prices.eth-usd.
var feedPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// ValidFeed reports whether name is a feed name.
func ValidFeed(name string) bool { return feedPattern.MatchString(name) }

// oracleActor resolves the identity a command acts as (--as) and checks that
// a acts for it.
func (o *Oracle) oracleActor(a Actor, publicID string) (events.IdentityRef, error) {
	if publicID == "" {
		return events.IdentityRef{}, Missing("as")
	}
	id, ok, err := o.ids.IdentityBySlug(publicID)
	if err != nil {
		return events.IdentityRef{}, err
	}
	if !ok {
		return events.IdentityRef{}, NotFound("identity_not_found", "as", "no identity has public_id %s", publicID)
	}
	if !a.ActsFor(o.log.NodeDID(), id) {
		return events.IdentityRef{}, Forbidden("forbidden", "this node may not act for %s", publicID)
	}
	return id, nil
}

func checkFeed(feed string) error {
	if feed == "" {
		return Missing("feed")
	}
	if !ValidFeed(feed) {
		return Invalid("feed", "feed must be 1..64 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit")
	}
	return nil
}

func checkPrice(field string, p *int64) error {
	if p == nil {
		return Missing(field)
	}
	if *p < 0 || *p > maxOraclePrice {
		return Invalid(field, "%s must be an integer from 0 to %d credits", field, int64(maxOraclePrice))
	}
	return nil
}

// FeedSigningBytes are the bytes a feed version's signature covers
// (events.OracleFeedSigningDomain).
func FeedSigningBytes(feed, publisherDID string, version uint64, price int64, payload json.RawMessage) ([]byte, error) {
	obj, err := json.Marshal(struct {
		Feed         string          `json:"feed"`
		Payload      json.RawMessage `json:"payload"`
		Price        int64           `json:"price"`
		PublisherDID string          `json:"publisher_did"`
		Version      uint64          `json:"version"`
	}{feed, payload, price, publisherDID, version})
	if err != nil {
		return nil, fmt.Errorf("feed signing bytes: %w", err)
	}
	canon, err := eventlog.CanonicalObject(obj)
	if err != nil {
		return nil, fmt.Errorf("feed signing bytes: %w", err)
	}
	return append([]byte(events.OracleFeedSigningDomain), canon...), nil
}

// VerifyFeed checks a feed version's signature against its publisher's DID.
func VerifyFeed(f events.OracleFeedPublished) error {
	pub, err := eventlog.PublicKeyFromDID(f.PublisherDID)
	if err != nil {
		return fmt.Errorf("publisher_did: %w", err)
	}
	sig, err := base64.StdEncoding.DecodeString(f.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return errors.New("the signature is not a base64 Ed25519 signature")
	}
	msg, err := FeedSigningBytes(f.Feed, f.PublisherDID, f.Version, f.Price, f.Payload)
	if err != nil {
		return err
	}
	if !ed25519.Verify(pub, msg, sig) {
		return fmt.Errorf("the signature does not verify against %s", f.PublisherDID)
	}
	return nil
}

// audit records an oracle action; a failed audit write fails the command
// after its event is durable, as the token commands do.
func (o *Oracle) audit(ctx context.Context, action, actor string, detail any) error {
	if _, err := o.auditor.Audit(ctx, action, actor, detail); err != nil {
		return fmt.Errorf("audit %s: %w", action, err)
	}
	return nil
}
