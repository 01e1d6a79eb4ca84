package commands

import (
	"context"
	"fmt"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// PullInput pulls a feed's newest version for a subscriber (civnode oracle pull).
type PullInput struct {
	As   string `json:"as"`
	Feed string `json:"feed"`
}

// Pulled is what a pull delivered.
type Pulled struct {
	// Feed is the newest version, its signature verified.
	Feed FeedVersion `json:"feed"`
	// Charged is what this pull cost: the version's price the first time the
	// subscriber pulls it, 0 after.
	Charged int64 `json:"charged"`
	// Balance is the subscriber's credit after the pull.
	Balance int64 `json:"balance"`
	// SettledEventID is the id of the oracle.settled that paid; empty when
	// nothing was charged.
	SettledEventID string `json:"settled_event_id,omitempty"`
}

// Pull delivers the feed's newest version to a subscriber. It delivers only a
// version whose signature verifies against its publisher, priced within the
// subscription's max_price; the first pull of a version pays its price to the
// publisher (oracle.settled), later pulls of it are free. A subscriber without
// the credit gets 409 insufficient_balance and nothing is recorded.
func (o *Oracle) Pull(ctx context.Context, a Actor, auditActor string, in PullInput) (Pulled, error) {
	if err := checkFeed(in.Feed); err != nil {
		return Pulled{}, err
	}
	sub, err := o.oracleActor(a, in.As)
	if err != nil {
		return Pulled{}, err
	}
	var (
		f      events.FeedRef
		charge bool
	)
	evs, err := o.log.Decide(ctx, func() ([]eventlog.Draft, error) {
		var ok bool
		if f, ok, err = o.feeds.Feed(in.Feed); err != nil {
			return nil, err
		} else if !ok {
			return nil, NotFound("feed_not_found", "feed", "no feed is named %s", in.Feed)
		}
		s, ok, err := o.feeds.Subscription(in.Feed, sub.AgentDID)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, Conflict("not_subscribed", "feed", "%s is not subscribed to %s; subscribe first", in.As, in.Feed)
		}
		if err := VerifyFeed(f.OracleFeedPublished); err != nil {
			return nil, Conflict("feed_unverified", "feed", "version %d of %s is not delivered: %v", f.Version, in.Feed, err)
		}
		if s.PaidVersion >= f.Version {
			return nil, nil // paid for already: delivered free, nothing to record
		}
		if f.Price > s.MaxPrice {
			return nil, Conflict("price_above_max", "feed",
				"version %d of %s costs %d credits, above the max_price %d of %s; subscribe again with a higher max price to pull it",
				f.Version, in.Feed, f.Price, s.MaxPrice, in.As)
		}
		credit, err := o.ids.Credit(sub.AgentDID)
		if err != nil {
			return nil, err
		}
		if credit < f.Price {
			return nil, Conflict("insufficient_balance", "as",
				"%s has %d credits; version %d of %s costs %d", in.As, credit, f.Version, in.Feed, f.Price)
		}
		charge = true
		return []eventlog.Draft{{Type: events.TypeOracleSettled, Payload: events.OracleSettled{
			Feed: f.Feed, Version: f.Version, Subscriber: sub.PublicID, SubscriberDID: sub.AgentDID,
			Publisher: f.Publisher, PublisherDID: f.PublisherDID, Price: f.Price,
		}}}, nil
	})
	if err != nil {
		return Pulled{}, err
	}
	out := Pulled{Feed: FeedVersion{OracleFeedPublished: f.OracleFeedPublished, EventID: f.EventID, PublishedAt: f.PublishedAt}}
	if charge {
		out.Charged, out.SettledEventID = f.Price, evs[0].ID
	}
	if out.Balance, err = o.ids.Credit(sub.AgentDID); err != nil {
		return Pulled{}, err
	}
	if err := o.audit(ctx, "oracle.pulled", auditActor, map[string]any{
		"feed": f.Feed, "version": f.Version, "subscriber": sub.PublicID, "charged": out.Charged,
	}); err != nil {
		return Pulled{}, fmt.Errorf("pull %s: %w", in.Feed, err)
	}
	return out, nil
}
