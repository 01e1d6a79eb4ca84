package oraclesock

import (
	"context"

	"github.com/civnode/civnode/commands"
)

// Service is what the oracle does, and what the server runs each request on.
// The node wires it to its own core; the CLI runs the same one on a stopped
// node's data dir, and *Client satisfies it too, so that both ways of working
// run the same commands and append the same events.
type Service interface {
	Publish(ctx context.Context, in commands.PublishFeedInput) (commands.FeedVersion, error)
	Subscribe(ctx context.Context, in commands.SubscribeInput) (commands.Subscription, error)
	Pull(ctx context.Context, in commands.PullInput) (commands.Pulled, error)
	// Balances lists every identity's credit, or only publicID's when it is
	// not empty.
	Balances(ctx context.Context, publicID string) ([]Balance, error)
	Feeds(ctx context.Context) ([]Feed, error)
}

// Balance is an identity's credit balance, the one mission rewards are paid
// into and feed pulls move (civnode oracle balance).
type Balance struct {
	PublicID string `json:"public_id"`
	AgentDID string `json:"agent_did"`
	Credit   int64  `json:"credit"`
}

// Feed is a feed as civnode oracle feeds lists it: its newest version without
// the payload, which subscribers pay for.
type Feed struct {
	Feed         string `json:"feed"`
	Publisher    string `json:"publisher"`
	PublisherDID string `json:"publisher_did"`
	Version      uint64 `json:"version"`
	Price        int64  `json:"price"`
	Subscribers  int64  `json:"subscribers"`
	Pulls        int64  `json:"pulls"`
	Earned       int64  `json:"earned"`
	PublishedAt  string `json:"published_at"`
	EventID      string `json:"event_id"`
}

var _ Service = (*Client)(nil)
