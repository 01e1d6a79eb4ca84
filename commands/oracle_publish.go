package commands

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// PublishFeedInput publishes a new version of a feed (civnode oracle publish).
type PublishFeedInput struct {
	// As is the publishing identity's public_id.
	As   string `json:"as"`
	Feed string `json:"feed"`
	// Payload is the feed's data, any JSON value of at most 64 KiB.
	Payload json.RawMessage `json:"payload"`
	// Price is what a subscriber pays to pull this version, in credits.
	Price *int64 `json:"price"`
	// Signature is the publisher's own signature (standard base64) over
	// FeedSigningBytes, for an identity whose key the node does not hold;
	// empty: the node signs with the identity's derived key.
	Signature string `json:"signature,omitempty"`
}

// FeedVersion is one published version of a feed, as the chain holds it.
type FeedVersion struct {
	events.OracleFeedPublished
	EventID     string `json:"event_id"`
	PublishedAt string `json:"published_at"`
}

// Publish appends oracle.feed.published: the next version of the feed,
// signed by the publisher. A feed belongs to the identity that first
// published it; only it publishes later versions.
func (o *Oracle) Publish(ctx context.Context, a Actor, auditActor string, in PublishFeedInput) (FeedVersion, error) {
	if err := checkFeed(in.Feed); err != nil {
		return FeedVersion{}, err
	}
	payload := bytes.TrimSpace(in.Payload)
	switch {
	case len(payload) == 0:
		return FeedVersion{}, Missing("payload")
	case len(payload) > maxFeedPayload:
		return FeedVersion{}, Invalid("payload", "payload must be at most %d bytes", maxFeedPayload)
	case !json.Valid(payload):
		return FeedVersion{}, Invalid("payload", "payload must be JSON")
	}
	if err := checkPrice("price", in.Price); err != nil {
		return FeedVersion{}, err
	}
	pub, err := o.oracleActor(a, in.As)
	if err != nil {
		return FeedVersion{}, err
	}
	var key ed25519.PrivateKey
	if in.Signature == "" {
		salt, ok, err := o.ids.KeySalt(pub.AgentDID)
		if err != nil {
			return FeedVersion{}, err
		}
		if !ok {
			return FeedVersion{}, Invalid("signature", "the node does not hold the key of %s: sign the feed yourself and give --signature", in.As)
		}
		if key, err = AgentKey(o.nodeKey, salt); err != nil {
			return FeedVersion{}, err
		}
	}
	var pl events.OracleFeedPublished
	evs, err := o.log.Decide(ctx, func() ([]eventlog.Draft, error) {
		prev, exists, err := o.feeds.Feed(in.Feed)
		if err != nil {
			return nil, err
		}
		if exists && prev.PublisherDID != pub.AgentDID {
			return nil, Forbidden("feed_owned", "feed %s is published by %s; choose another name", in.Feed, prev.Publisher)
		}
		pl = events.OracleFeedPublished{Feed: in.Feed, Publisher: pub.PublicID, PublisherDID: pub.AgentDID,
			Version: prev.Version + 1, Price: *in.Price, Payload: json.RawMessage(payload), Signature: in.Signature}
		if key != nil {
			msg, err := FeedSigningBytes(pl.Feed, pl.PublisherDID, pl.Version, pl.Price, pl.Payload)
			if err != nil {
				return nil, err
			}
			pl.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(key, msg))
		}
		if err := VerifyFeed(pl); err != nil {
			return nil, Invalid("signature", "feed %s version %d: %v", pl.Feed, pl.Version, err)
		}
		return []eventlog.Draft{{Type: events.TypeOracleFeedPublished, Payload: pl}}, nil
	})
	if err != nil {
		return FeedVersion{}, err
	}
	ev := evs[0]
	if err := o.audit(ctx, "oracle.published", auditActor, map[string]any{
		"feed": pl.Feed, "version": pl.Version, "publisher": pl.Publisher, "price": pl.Price, "event_id": ev.ID,
	}); err != nil {
		return FeedVersion{}, err
	}
	return FeedVersion{OracleFeedPublished: pl, EventID: ev.ID, PublishedAt: ev.Timestamp}, nil
}
