package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/civnode/civnode/commands"
)

// oracleClient runs the oracle on the node running on the data dir, through
// its oracle socket (oracle_socket.go). A refusal comes back as the same
// *commands.Error the commands return on a stopped node's data dir, so both
// ways of working print alike.
type oracleClient struct {
	conn net.Conn
	br   *bufio.Reader
	path string
}

// oracleCallTimeout bounds one call: the node's own bound and a margin.
const oracleCallTimeout = oracleRequestTimeout + 5*time.Second

// dialOracle connects to the oracle socket at path. A path with no socket is
// fs.ErrNotExist (dialSocket).
func dialOracle(ctx context.Context, path string) (*oracleClient, error) {
	conn, err := dialSocket(ctx, path)
	if err != nil {
		return nil, err
	}
	return &oracleClient{conn: conn, br: bufio.NewReaderSize(conn, 64<<10), path: path}, nil
}

// Close closes the connection.
func (c *oracleClient) Close() error { return c.conn.Close() }

// oracleNodeError is a request the node could not run for a reason of its
// own (stopping, timeout, internal), as opposed to a refusal.
type oracleNodeError struct {
	Via string
	oracleError
}

func (e *oracleNodeError) Error() string {
	return fmt.Sprintf("the node at %s: %s (%s)", e.Via, e.Message, e.Code)
}

// call sends one request and decodes its result into out.
func (c *oracleClient) call(ctx context.Context, op string, args, out any) error {
	deadline := time.Now().Add(oracleCallTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := c.conn.SetDeadline(deadline); err != nil {
		return fmt.Errorf("oracle socket %s: %w", c.path, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = c.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	raw, err := marshalPlain(args)
	if err != nil {
		return fmt.Errorf("encode %s request: %w", op, err)
	}
	req, err := marshalPlain(oracleRequest{Op: op, Args: raw})
	if err != nil {
		return fmt.Errorf("encode %s request: %w", op, err)
	}
	if _, err := c.conn.Write(append(req, '\n')); err != nil {
		return c.ioError(ctx, "send the request to", err)
	}
	line, err := readLine(c.br, oracleResponseLimit)
	if err != nil {
		return c.ioError(ctx, "read the answer of", err)
	}
	var resp oracleResponse
	if err := json.Unmarshal(line, &resp); err != nil {
		return fmt.Errorf("decode the answer of the node at %s: %w", c.path, err)
	}
	if resp.Error != nil {
		return resp.Error.err(c.path)
	}
	if len(resp.Result) == 0 {
		return fmt.Errorf("the node at %s answered %s with neither a result nor an error", c.path, op)
	}
	if err := json.Unmarshal(resp.Result, out); err != nil {
		return fmt.Errorf("decode the %s result of the node at %s: %w", op, c.path, err)
	}
	return nil
}

// ioError names the socket in a failed exchange; a canceled ctx is its own
// reason.
func (c *oracleClient) ioError(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("%s the node at %s: %w", what, c.path, err)
}

// err turns an answered error back into what the commands return.
func (e *oracleError) err(via string) error {
	for k, name := range oracleKinds {
		if name == e.Kind {
			return &commands.Error{Kind: k, Code: e.Code, Field: e.Field, Message: e.Message}
		}
	}
	return &oracleNodeError{Via: via, oracleError: *e}
}

func (c *oracleClient) Publish(ctx context.Context, in commands.PublishFeedInput) (commands.FeedVersion, error) {
	var out commands.FeedVersion
	err := c.call(ctx, oracleOpPublish, in, &out)
	return out, err
}

func (c *oracleClient) Subscribe(ctx context.Context, in commands.SubscribeInput) (commands.Subscription, error) {
	var out commands.Subscription
	err := c.call(ctx, oracleOpSubscribe, in, &out)
	return out, err
}

func (c *oracleClient) Pull(ctx context.Context, in commands.PullInput) (commands.Pulled, error) {
	var out commands.Pulled
	err := c.call(ctx, oracleOpPull, in, &out)
	return out, err
}

func (c *oracleClient) Balances(ctx context.Context, publicID string) ([]oracleBalance, error) {
	var out oracleBalances
	if err := c.call(ctx, oracleOpBalance, oracleBalanceArgs{Agent: publicID}, &out); err != nil {
		return nil, err
	}
	if out.Balances == nil {
		return nil, errors.New("the node's balance answer holds no balances")
	}
	return out.Balances, nil
}

func (c *oracleClient) Feeds(ctx context.Context) ([]oracleFeed, error) {
	var out oracleFeeds
	if err := c.call(ctx, oracleOpFeeds, struct{}{}, &out); err != nil {
		return nil, err
	}
	if out.Feeds == nil {
		return nil, errors.New("the node's feeds answer holds no feeds")
	}
	return out.Feeds, nil
}
