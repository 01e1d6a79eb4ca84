package commands

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"strconv"

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
	if err := checkExactNumbers(payload); err != nil {
		return FeedVersion{}, err
	}
	if err := checkPrice("price", in.Price); err != nil {
		return FeedVersion{}, err
	}
	pub, err := o.oracleActor(a, in.As)
	if err != nil {
		return FeedVersion{}, err
	}
	// The identity's key is derived from the node key and its key_salt
	// (agentkey.go); the node signs for it as it acts for it.
	salt, ok, err := o.ids.KeySalt(pub.AgentDID)
	if err != nil {
		return FeedVersion{}, err
	}
	if !ok {
		return FeedVersion{}, fmt.Errorf("publish %s: identity %s has no key salt", in.Feed, pub.AgentDID)
	}
	if o.nodeKey == nil {
		return FeedVersion{}, eventlog.ErrReadOnly
	}
	key, err := AgentKey(o.nodeKey, salt)
	if err != nil {
		return FeedVersion{}, err
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
			Version: prev.Version + 1, Price: *in.Price, Payload: json.RawMessage(payload)}
		msg, err := FeedSigningBytes(pl.Feed, pl.PublisherDID, pl.Version, pl.Price, pl.Payload)
		if err != nil {
			return nil, err
		}
		pl.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(key, msg))
		return []eventlog.Draft{{Type: events.TypeOracleFeedPublished, Payload: pl}}, nil
	})
	if err != nil {
		return FeedVersion{}, err
	}
	ev := evs[0]
	// What subscribers get is the payload as the chain holds it: RFC 8785,
	// the same value in canonical form.
	var stored events.OracleFeedPublished
	if err := json.Unmarshal(ev.Payload, &stored); err != nil {
		return FeedVersion{}, fmt.Errorf("publish %s: decode the appended event: %w", in.Feed, err)
	}
	pl.Payload = stored.Payload
	if err := o.audit(ctx, "oracle.published", auditActor, map[string]any{
		"feed": pl.Feed, "version": pl.Version, "publisher": pl.Publisher, "price": pl.Price, "event_id": ev.ID,
	}); err != nil {
		return FeedVersion{}, err
	}
	return FeedVersion{OracleFeedPublished: pl, EventID: ev.ID, PublishedAt: ev.Timestamp}, nil
}

// maxExactInteger is 2^53: beyond it an integer is not exactly a double, and
// RFC 8785 would store another number than the publisher sent.
const maxExactInteger = 1 << 53

// checkExactNumbers refuses a payload with a number the chain cannot hold
// exactly: an integer beyond ±2^53 or a number beyond a double's range
// (I-JSON, RFC 7493 §2.2). Such a value belongs in a string.
func checkExactNumbers(payload []byte) error {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return Invalid("payload", "payload must be JSON")
		}
		n, ok := tok.(json.Number)
		if !ok {
			continue
		}
		exact := true
		if i, isInt := new(big.Int).SetString(n.String(), 10); isInt {
			exact = i.CmpAbs(big.NewInt(maxExactInteger)) <= 0
		} else if _, err := strconv.ParseFloat(n.String(), 64); err != nil {
			exact = false
		}
		if !exact {
			return Invalid("payload", "the number %s cannot be kept exactly (integers to ±2^53, doubles otherwise; RFC 7493): send it as a string", n)
		}
	}
}
