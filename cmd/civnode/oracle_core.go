package main

import (
	"context"

	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/projections"
)

// oracleService is what the oracle subcommands do. coreOracle does it on an
// opened core; oracleClient asks the running node, whose oracle socket runs a
// coreOracle on the node's own core. Both paths therefore run the same
// commands and append the same events.
type oracleService interface {
	Publish(ctx context.Context, in commands.PublishFeedInput) (commands.FeedVersion, error)
	Subscribe(ctx context.Context, in commands.SubscribeInput) (commands.Subscription, error)
	Pull(ctx context.Context, in commands.PullInput) (commands.Pulled, error)
	// Balances lists every identity's credit, or only publicID's when it is
	// not empty.
	Balances(ctx context.Context, publicID string) ([]oracleBalance, error)
	Feeds(ctx context.Context) ([]oracleFeed, error)
}

// oracleBalance is an identity's credit balance, the one mission rewards are
// paid into and feed pulls move (civnode oracle balance).
type oracleBalance struct {
	PublicID string `json:"public_id"`
	AgentDID string `json:"agent_did"`
	Credit   int64  `json:"credit"`
}

// oracleFeed is a feed as civnode oracle feeds lists it: its newest version
// without the payload, which subscribers pay for.
type oracleFeed struct {
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

// coreOracle runs the oracle on an opened core: the CLI's own when no node
// runs on the data dir, the node's behind its oracle socket when one does. It
// acts as the node's owner, as the other commands that open the data dir do
// (offlineTokens), and its audit entries name the node DID.
type coreOracle struct{ node *core.Core }

func (o coreOracle) auditActor() string { return o.node.Log.NodeDID() }

func (o coreOracle) Publish(ctx context.Context, in commands.PublishFeedInput) (commands.FeedVersion, error) {
	return o.node.Oracle.Publish(ctx, nodeActor, o.auditActor(), in)
}

func (o coreOracle) Subscribe(ctx context.Context, in commands.SubscribeInput) (commands.Subscription, error) {
	return o.node.Oracle.Subscribe(ctx, nodeActor, o.auditActor(), in)
}

func (o coreOracle) Pull(ctx context.Context, in commands.PullInput) (commands.Pulled, error) {
	return o.node.Oracle.Pull(ctx, nodeActor, o.auditActor(), in)
}

// balancePage is how many identities Balances reads at a time.
const balancePage = 1000

func (o coreOracle) Balances(ctx context.Context, publicID string) ([]oracleBalance, error) {
	ids := o.node.Identities
	if publicID != "" {
		id, ok, err := ids.IdentityBySlug(publicID)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, commands.NotFound("identity_not_found", "agent", "no identity has public_id %s", publicID)
		}
		credit, err := ids.Credit(id.AgentDID)
		if err != nil {
			return nil, err
		}
		return []oracleBalance{{PublicID: id.PublicID, AgentDID: id.AgentDID, Credit: credit}}, nil
	}
	out := []oracleBalance{}
	for cursor := ""; ; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		recs, next, err := ids.List(projections.Page{Cursor: cursor, Limit: balancePage})
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			out = append(out, oracleBalance{PublicID: r.PublicID, AgentDID: r.AgentDID, Credit: r.Stats.Credit})
		}
		if next == "" {
			return out, nil
		}
		cursor = next
	}
}

func (o coreOracle) Feeds(context.Context) ([]oracleFeed, error) {
	feeds, err := o.node.Feeds.Feeds()
	if err != nil {
		return nil, err
	}
	out := make([]oracleFeed, len(feeds))
	for i, f := range feeds {
		out[i] = oracleFeed{Feed: f.Feed, Publisher: f.Publisher, PublisherDID: f.PublisherDID, Version: f.Version,
			Price: f.Price, Subscribers: f.Subscribers, Pulls: f.Pulls, Earned: f.Earned,
			PublishedAt: f.PublishedAt, EventID: f.EventID}
	}
	return out, nil
}

// Both ways of working satisfy oracleService.
var (
	_ oracleService = coreOracle{}
	_ oracleService = (*oracleClient)(nil)
)
