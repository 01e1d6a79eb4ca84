package oraclesock

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/internal/unixsock"
)

// Client runs the oracle on the node serving the socket. A refusal comes back
// as the same *commands.Error the commands return on a stopped node's data
// dir, so both ways of working print alike.
type Client struct {
	conn net.Conn
	br   *bufio.Reader
	path string
}

// callTimeout bounds one call: the node's own bound and a margin.
const callTimeout = RequestTimeout + 5*time.Second

// Dial connects to the socket at path. A path with no socket is
// fs.ErrNotExist.
func Dial(ctx context.Context, path string) (*Client, error) {
	conn, err := unixsock.Dial(ctx, path)
	if err != nil {
		return nil, err
	}
	return &Client{conn: conn, br: bufio.NewReaderSize(conn, 64<<10), path: path}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// call sends one request and decodes its result into out.
func (c *Client) call(ctx context.Context, op string, args, out any) error {
	deadline := time.Now().Add(callTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := c.conn.SetDeadline(deadline); err != nil {
		return fmt.Errorf("oracle socket %s: %w", c.path, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = c.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	raw, err := Marshal(args)
	if err != nil {
		return fmt.Errorf("encode %s request: %w", op, err)
	}
	req, err := Marshal(Request{Op: op, Args: raw})
	if err != nil {
		return fmt.Errorf("encode %s request: %w", op, err)
	}
	if _, err := c.conn.Write(append(req, '\n')); err != nil {
		return c.ioError(ctx, "send the request to", err)
	}
	line, err := readLine(c.br, ResponseLimit)
	if err != nil {
		return c.ioError(ctx, "read the answer of", err)
	}
	var resp Response
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
func (c *Client) ioError(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("%s the node at %s: %w", what, c.path, err)
}

func (c *Client) Publish(ctx context.Context, in commands.PublishFeedInput) (commands.FeedVersion, error) {
	var out commands.FeedVersion
	err := c.call(ctx, opPublish, in, &out)
	return out, err
}

func (c *Client) Subscribe(ctx context.Context, in commands.SubscribeInput) (commands.Subscription, error) {
	var out commands.Subscription
	err := c.call(ctx, opSubscribe, in, &out)
	return out, err
}

func (c *Client) Pull(ctx context.Context, in commands.PullInput) (commands.Pulled, error) {
	var out commands.Pulled
	err := c.call(ctx, opPull, in, &out)
	return out, err
}

func (c *Client) Balances(ctx context.Context, publicID string) ([]Balance, error) {
	var out BalanceList
	if err := c.call(ctx, opBalance, BalanceArgs{Agent: publicID}, &out); err != nil {
		return nil, err
	}
	if out.Balances == nil {
		return nil, errors.New("the node's balance answer holds no balances")
	}
	return out.Balances, nil
}

func (c *Client) Feeds(ctx context.Context) ([]Feed, error) {
	var out FeedList
	if err := c.call(ctx, opFeeds, struct{}{}, &out); err != nil {
		return nil, err
	}
	if out.Feeds == nil {
		return nil, errors.New("the node's feeds answer holds no feeds")
	}
	return out.Feeds, nil
}
