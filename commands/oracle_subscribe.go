package commands

import (
	"context"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// SubscribeInput subscribes an identity to a feed (civnode oracle subscribe).
type SubscribeInput struct {
	As   string `json:"as"`
	Feed string `json:"feed"`
	// MaxPrice is the most the subscriber pays for one version, in credits.
	MaxPrice *int64 `json:"max_price"`
}

// Subscription is a subscription as recorded.
type Subscription struct {
	events.OracleSubscribed
	EventID      string `json:"event_id"`
	SubscribedAt string `json:"subscribed_at"`
}

// Subscribe appends oracle.subscribed. Subscribing again changes max_price;
// what was paid for stays paid for. Subscribing again with the same max_price
// changes nothing and appends nothing: it answers the subscription as it is.
func (o *Oracle) Subscribe(ctx context.Context, a Actor, auditActor string, in SubscribeInput) (Subscription, error) {
	if err := checkFeed(in.Feed); err != nil {
		return Subscription{}, err
	}
	if err := checkPrice("max_price", in.MaxPrice); err != nil {
		return Subscription{}, err
	}
	sub, err := o.oracleActor(a, in.As)
	if err != nil {
		return Subscription{}, err
	}
	pl := events.OracleSubscribed{Feed: in.Feed, Subscriber: sub.PublicID, SubscriberDID: sub.AgentDID, MaxPrice: *in.MaxPrice}
	var same *Subscription
	evs, err := o.log.Decide(ctx, func() ([]eventlog.Draft, error) {
		f, ok, err := o.feeds.Feed(in.Feed)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, NotFound("feed_not_found", "feed", "no feed is named %s", in.Feed)
		}
		if f.PublisherDID == sub.AgentDID {
			return nil, Invalid("as", "%s publishes %s; a publisher does not subscribe to its own feed", in.As, in.Feed)
		}
		if s, ok, err := o.feeds.Subscription(in.Feed, sub.AgentDID); err != nil {
			return nil, err
		} else if ok && s.MaxPrice == pl.MaxPrice && s.Current.Subscriber == pl.Subscriber {
			same = &Subscription{OracleSubscribed: s.Current, EventID: s.EventID, SubscribedAt: s.SubscribedAt}
			return nil, nil
		}
		return []eventlog.Draft{{Type: events.TypeOracleSubscribed, Payload: pl}}, nil
	})
	if err != nil {
		return Subscription{}, err
	}
	if same != nil {
		return *same, nil
	}
	ev := evs[0]
	if err := o.audit(ctx, "oracle.subscribed", auditActor, map[string]any{
		"feed": pl.Feed, "subscriber": pl.Subscriber, "max_price": pl.MaxPrice, "event_id": ev.ID,
	}); err != nil {
		return Subscription{}, err
	}
	return Subscription{OracleSubscribed: pl, EventID: ev.ID, SubscribedAt: ev.Timestamp}, nil
}
