package projections

import (
	"encoding/json"
	"fmt"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// Oracle answers the oracle's queries from the oracle read model: each feed's
// newest version and its subscriptions. Balances are the identities model's:
// oracle.settled moves credit there (identities_apply.go).
//
// Its state lives in the log's model space under these keys:
//
//	o/f 0 <feed>                        the feed's newest version (FeedState, JSON)
//	o/s 0 <feed> 0 <subscriber_did>     a subscription (SubscriptionState, JSON)
//	o/k                                 events the model could not apply
type Oracle struct{ queries }

// FeedState is a feed as the model keeps it: its newest version, with the
// counts the feeds listing shows.
type FeedState struct {
	events.OracleFeedPublished
	EventID     string `json:"event_id"`
	PublishedAt string `json:"published_at"`
	// Subscribers counts the feed's subscriptions; Pulls its paid pulls and
	// Earned the credits they paid, over every version.
	Subscribers int64 `json:"subscribers"`
	Pulls       int64 `json:"pulls"`
	Earned      int64 `json:"earned"`
}

// SubscriptionState is a subscription as the model keeps it.
type SubscriptionState struct {
	events.OracleSubscribed
	EventID      string `json:"event_id"`
	SubscribedAt string `json:"subscribed_at"`
	// PaidVersion is the newest version the subscriber paid for; 0 for none.
	PaidVersion uint64 `json:"paid_version"`
}

// Key tags of the oracle model.
const (
	oracleFeed    = "o/f"
	oracleSub     = "o/s"
	oracleSkipped = "o/k"
)

// NewOracle returns the queries of the oracle model kept in src; they see
// durable state only.
func NewOracle(src Source) *Oracle { return &Oracle{queries{src: src}} }

// Decisions returns the same model read at its newest state, sequenced events
// included: what commands consult inside eventlog.Log.Decide.
func (p *Oracle) Decisions() *Oracle { return &Oracle{p.decisions()} }

// Skipped counts oracle events that could not be applied. It stays 0 on a
// chain written by civnode's commands.
func (p *Oracle) Skipped() (uint64, error) { return skipped(p.src, key(oracleSkipped)) }

// FeedState returns the feed named feed.
func (p *Oracle) FeedState(feed string) (FeedState, bool, error) {
	r, done, err := p.reader()
	if err != nil {
		return FeedState{}, false, err
	}
	defer done()
	var f FeedState
	ok, err := load(r, key(oracleFeed, feed), &f)
	return f, ok, err
}

// Feed is FeedState as the write side needs it (commands.OracleReader).
func (p *Oracle) Feed(feed string) (events.FeedRef, bool, error) {
	f, ok, err := p.FeedState(feed)
	if !ok || err != nil {
		return events.FeedRef{}, ok, err
	}
	return events.FeedRef{OracleFeedPublished: f.OracleFeedPublished, EventID: f.EventID, PublishedAt: f.PublishedAt}, true, nil
}

// SubscriptionState returns the subscription of subscriberDID to feed.
func (p *Oracle) SubscriptionState(feed, subscriberDID string) (SubscriptionState, bool, error) {
	r, done, err := p.reader()
	if err != nil {
		return SubscriptionState{}, false, err
	}
	defer done()
	var s SubscriptionState
	ok, err := load(r, key(oracleSub, feed, subscriberDID), &s)
	return s, ok, err
}

// Subscription is SubscriptionState as the write side needs it
// (commands.OracleReader).
func (p *Oracle) Subscription(feed, subscriberDID string) (events.SubscriptionRef, bool, error) {
	s, ok, err := p.SubscriptionState(feed, subscriberDID)
	if !ok || err != nil {
		return events.SubscriptionRef{}, ok, err
	}
	return events.SubscriptionRef{Current: s.OracleSubscribed, EventID: s.EventID, SubscribedAt: s.SubscribedAt,
		MaxPrice: s.MaxPrice, PaidVersion: s.PaidVersion}, true, nil
}

// Feeds returns every feed, by name. A node holds few feeds (each is a name
// an identity chose), so the list is not paged.
func (p *Oracle) Feeds() ([]FeedState, error) {
	v, err := view(p.src)
	if err != nil {
		return nil, err
	}
	defer v.Close()
	out := []FeedState{}
	lo, hi := under(key(oracleFeed))
	err = v.Scan(lo, hi, false, func(_, val []byte) (bool, error) {
		var f FeedState
		if err := json.Unmarshal(val, &f); err != nil {
			return false, fmt.Errorf("decode feed: %w", err)
		}
		out = append(out, f)
		return true, nil
	})
	if err != nil {
		return nil, storeErr(err)
	}
	return out, nil
}

// foldOracle folds one event into the oracle model.
func foldOracle(w writer, ev *eventlog.Event) error {
	switch ev.Type {
	case events.TypeOracleFeedPublished:
		return applyFeedPublished(w, ev)
	case events.TypeOracleSubscribed:
		return applySubscribed(w, ev)
	case events.TypeOracleSettled:
		return applyOracleSettled(w, ev)
	default:
		return errNotOurs
	}
}

// applyFeedPublished makes ev the feed's newest version: the next one, by its
// owner.
func applyFeedPublished(w writer, ev *eventlog.Event) error {
	var pl events.OracleFeedPublished
	if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	var f FeedState
	exists, err := load(w, key(oracleFeed, pl.Feed), &f)
	switch {
	case err != nil:
		return err
	case exists && f.PublisherDID != pl.PublisherDID:
		return fmt.Errorf("feed %s is %s's, not %s's", pl.Feed, f.PublisherDID, pl.PublisherDID)
	case pl.Version != f.Version+1:
		return fmt.Errorf("feed %s version %d follows version %d", pl.Feed, pl.Version, f.Version)
	}
	f.OracleFeedPublished, f.EventID, f.PublishedAt = pl, ev.ID, ev.Timestamp
	return store(w, key(oracleFeed, pl.Feed), f)
}

// applySubscribed records a subscription, or its new max_price.
func applySubscribed(w writer, ev *eventlog.Event) error {
	var pl events.OracleSubscribed
	if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	var f FeedState
	if ok, err := load(w, key(oracleFeed, pl.Feed), &f); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("unknown feed %q", pl.Feed)
	}
	var s SubscriptionState
	k := key(oracleSub, pl.Feed, pl.SubscriberDID)
	exists, err := load(w, k, &s)
	if err != nil {
		return err
	}
	if !exists {
		f.Subscribers++
		if err := store(w, key(oracleFeed, pl.Feed), f); err != nil {
			return err
		}
	}
	s.OracleSubscribed, s.EventID, s.SubscribedAt = pl, ev.ID, ev.Timestamp
	return store(w, k, s)
}

// applyOracleSettled marks a version paid for by its subscriber.
func applyOracleSettled(w writer, ev *eventlog.Event) error {
	var pl events.OracleSettled
	if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	var s SubscriptionState
	k := key(oracleSub, pl.Feed, pl.SubscriberDID)
	if ok, err := load(w, k, &s); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("%s is not subscribed to %s", pl.SubscriberDID, pl.Feed)
	}
	var f FeedState
	if ok, err := load(w, key(oracleFeed, pl.Feed), &f); err != nil {
		return err
	} else if !ok || pl.Version > f.Version || pl.Version <= s.PaidVersion {
		return fmt.Errorf("version %d of %s cannot be paid for by %s", pl.Version, pl.Feed, pl.SubscriberDID)
	}
	s.PaidVersion = pl.Version
	f.Pulls++
	f.Earned += pl.Price
	if err := store(w, k, s); err != nil {
		return err
	}
	return store(w, key(oracleFeed, pl.Feed), f)
}
