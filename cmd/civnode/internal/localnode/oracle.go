package localnode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/internal/logkey"
	"github.com/civnode/civnode/internal/unixsock"
	"github.com/civnode/civnode/oraclesock"
	"github.com/civnode/civnode/projections"
)

// startOracleSocket serves the oracle of node on the unix socket at path
// until Close, or returns nil, with a warning, when the node must run without
// one: civnode oracle then cannot reach it while it runs.
func startOracleSocket(ctx context.Context, path string, node *core.Core, logger *slog.Logger) *oraclesock.Server {
	ln, err := unixsock.Listen(path, logger)
	if err != nil {
		logger.Warn("serving without the oracle socket, so civnode oracle cannot reach the node while it runs",
			logkey.Path, path, logkey.Err, err)
		return nil
	}
	s := oraclesock.Serve(ctx, ln, Oracle{node}, logger)
	logger.Info("listening on the oracle socket", logkey.Path, path)
	return s
}

// OpenOracle opens the oracle of the data dir: through the oracle socket
// of the node running on it, or, when none answers there, on the data dir
// itself. The socket is tried first, so that while a node runs this process
// never opens its database. A node that holds the database without an oracle
// socket (a killed node's stale socket is refused, one too long a path is
// never made) leaves nothing to do but say so. The caller calls closeFn.
func OpenOracle(ctx context.Context, dir datadir.Dir, logger *slog.Logger) (svc oraclesock.Service, closeFn func() error, err error) {
	sock := dir.OracleSocketPath()
	client, dialErr := oraclesock.Dial(ctx, sock)
	if dialErr == nil {
		logger.Debug("a node runs on the data dir; using its oracle socket", logkey.Path, sock)
		return client, func() error { client.Close(); return nil }, nil
	}
	logger.Debug("no node answers on the oracle socket; opening the data dir", logkey.Path, sock, logkey.Err, dialErr)
	node, err := OpenExisting(ctx, dir, logger)
	if errors.Is(err, datadir.ErrInUse) {
		return nil, nil, fmt.Errorf("%w, but its oracle socket %s cannot be reached (%w); the node's log says why it serves none", err, sock, dialErr)
	}
	if err != nil {
		return nil, nil, err
	}
	return Oracle{node}, func() error {
		if err := node.Close(); err != nil {
			return fmt.Errorf("close event log: %w", err)
		}
		return nil
	}, nil
}

// Oracle runs the oracle on an opened core: the CLI's own when no node
// runs on the data dir, the node's behind its oracle socket (oraclesock) when one does. It
// acts as the node's owner, as the other commands that open the data dir do
// (admin.OfflineTokens), and its audit entries name the node DID.
type Oracle struct{ node *core.Core }

// Owner is the owner without a token, as the commands that open the data
// dir act: whoever can open it holds the node key. The commands audit it as
// the node DID.
var Owner = commands.Actor{Kind: commands.ActorOwner}

func (o Oracle) auditActor() string { return o.node.Log.NodeDID() }

func (o Oracle) Publish(ctx context.Context, in commands.PublishFeedInput) (commands.FeedVersion, error) {
	return o.node.Oracle.Publish(ctx, Owner, o.auditActor(), in)
}

func (o Oracle) Subscribe(ctx context.Context, in commands.SubscribeInput) (commands.Subscription, error) {
	return o.node.Oracle.Subscribe(ctx, Owner, o.auditActor(), in)
}

func (o Oracle) Pull(ctx context.Context, in commands.PullInput) (commands.Pulled, error) {
	return o.node.Oracle.Pull(ctx, Owner, o.auditActor(), in)
}

// balancePage is how many identities Balances reads at a time.
const balancePage = 1000

func (o Oracle) Balances(ctx context.Context, publicID string) ([]oraclesock.Balance, error) {
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
		return []oraclesock.Balance{{PublicID: id.PublicID, AgentDID: id.AgentDID, Credit: credit}}, nil
	}
	out := []oraclesock.Balance{}
	for cursor := ""; ; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		recs, next, err := ids.List(projections.Page{Cursor: cursor, Limit: balancePage})
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			out = append(out, oraclesock.Balance{PublicID: r.PublicID, AgentDID: r.AgentDID, Credit: r.Stats.Credit})
		}
		if next == "" {
			return out, nil
		}
		cursor = next
	}
}

func (o Oracle) Feeds(context.Context) ([]oraclesock.Feed, error) {
	feeds, err := o.node.Feeds.Feeds()
	if err != nil {
		return nil, err
	}
	out := make([]oraclesock.Feed, len(feeds))
	for i, f := range feeds {
		out[i] = oraclesock.Feed{Feed: f.Feed, Publisher: f.Publisher, PublisherDID: f.PublisherDID, Version: f.Version,
			Price: f.Price, Subscribers: f.Subscribers, Pulls: f.Pulls, Earned: f.Earned,
			PublishedAt: f.PublishedAt, EventID: f.EventID}
	}
	return out, nil
}

var _ oraclesock.Service = Oracle{}
