package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog"
	civhttp "github.com/civnode/civnode/http"
)

// The oracle socket: how civnode oracle reaches the node running on its data
// dir. The oracle has no HTTP endpoint (wire.md §10), so this channel is not
// HTTP either: serve listens on <data-dir>/oracle.sock, a unix socket with
// mode 0600 inside the 0700 data dir, so only the user who runs the node can
// connect, and that user could as well open node.key. Whoever connects acts
// as the node's owner, as the CLI does when it opens the data dir itself.
//
// The protocol is newline-delimited JSON. A client writes one request per
// line and reads one response line for each, in order; a connection may carry
// any number of them:
//
//	{"op":"publish","args":{"as":"ada","feed":"prices.eth-usd","payload":{…},"price":5}}
//	{"result":{"feed":"prices.eth-usd","version":1,…}}
//
//	{"op":"pull","args":{"as":"bob","feed":"prices.eth-usd"}}
//	{"error":{"kind":"conflict","code":"insufficient_balance","message":"bob has 3 credits; …","field":"as"}}
//
// op is publish, subscribe, pull (args: the commands' input, as in
// commands.PublishFeedInput), balance (args {"agent": PUBLIC_ID}, optional),
// or feeds (no args). A result is exactly what civnode oracle
// --json prints for the command, except balance, which is always
// {"balances":[…]}. Unknown members are refused. The node runs each request
// through the same coreOracle the CLI runs on a stopped node's data dir.
//
// A request line is at most oracleRequestLimit bytes; a longer one is answered
// with request_too_large and the connection closed. Each request has
// oracleRequestTimeout to finish; a connection with no request for
// oracleIdleTimeout is closed. On stop, serve closes the listener, lets the
// requests in flight finish and answer, closes every connection and removes
// the socket file.

// Bounds of the oracle socket.
const (
	// oracleRequestLimit bounds one request line; a feed payload is at most
	// 64 KiB, so a request is far smaller.
	oracleRequestLimit = 1 << 20
	// oracleResponseLimit bounds what the client reads of one answer: the
	// balances of every identity can be long.
	oracleResponseLimit = 64 << 20
	// oracleRequestTimeout bounds one request on the node.
	oracleRequestTimeout = 30 * time.Second
	// oracleIdleTimeout closes a connection that sends no request.
	oracleIdleTimeout = 2 * time.Minute
	// oracleWriteTimeout bounds the write of one answer.
	oracleWriteTimeout = 10 * time.Second
	// oracleMaxConns bounds the connections served at once; more wait to be
	// accepted.
	oracleMaxConns = 64
)

// Operations of the oracle socket.
const (
	oracleOpPublish   = "publish"
	oracleOpSubscribe = "subscribe"
	oracleOpPull      = "pull"
	oracleOpBalance   = "balance"
	oracleOpFeeds     = "feeds"
)

// oracleRequest is one request line.
type oracleRequest struct {
	Op   string          `json:"op"`
	Args json.RawMessage `json:"args,omitempty"`
}

// oracleResponse is one response line: Result or Error.
type oracleResponse struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *oracleError    `json:"error,omitempty"`
}

// oracleError is a failed request, and what civnode oracle --json prints for
// a failed command. Kind is invalid, forbidden, not_found or conflict for a
// refusal (commands.Kind), unavailable when the node cannot take the request
// now, internal for a fault whose detail is in the node's log; the CLI adds
// failed for its own errors.
type oracleError struct {
	Kind    string `json:"kind"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// oracleKinds names the kinds of commands.Error on the wire.
var oracleKinds = map[commands.Kind]string{
	commands.KindInvalid:         "invalid",
	commands.KindForbidden:       "forbidden",
	commands.KindNotFound:        "not_found",
	commands.KindConflict:        "conflict",
	commands.KindUpstream:        "upstream",
	commands.KindUpstreamTimeout: "upstream_timeout",
}

// oracleErrorOf is the one function that turns the error of an oracle request
// into its answer. internal reports that err's detail was withheld, so the
// caller must log it.
func oracleErrorOf(err error) (e oracleError, internal bool) {
	var ce *commands.Error
	switch {
	case errors.As(err, &ce) && oracleKinds[ce.Kind] != "":
		return oracleError{Kind: oracleKinds[ce.Kind], Code: ce.Code, Message: ce.Message, Field: ce.Field}, false
	case errors.Is(err, errOracleStopping):
		return oracleError{Kind: "unavailable", Code: "stopping", Message: "the node is stopping"}, false
	case errors.Is(err, eventlog.ErrFailed), errors.Is(err, eventlog.ErrClosed):
		return oracleError{Kind: "unavailable", Code: "unavailable", Message: "the node cannot accept writes; see its log"}, true
	case errors.Is(err, context.DeadlineExceeded):
		return oracleError{Kind: "unavailable", Code: "timeout",
			Message: fmt.Sprintf("the request took longer than %v", oracleRequestTimeout)}, false
	default:
		return oracleError{Kind: "internal", Code: "internal", Message: "internal error; see the node's log"}, true
	}
}

var (
	errOracleStopping     = errors.New("the node is stopping")
	errOracleRequestLarge = fmt.Errorf("request line over %d bytes", oracleRequestLimit)
)

// oracleServer serves the oracle socket.
type oracleServer struct {
	svc    oracleService
	logger *slog.Logger
	ln     *net.UnixListener
	// base is the context of every request: not canceled when serve's is, so
	// that a stop lets requests in flight finish.
	base  context.Context
	slots chan struct{}
	done  chan struct{}

	wg     sync.WaitGroup // the accept loop and every connection
	mu     sync.Mutex
	conns  map[*oracleConn]struct{}
	closed bool
	once   sync.Once
}

// oracleConn is one connection; busy while it runs a request.
type oracleConn struct {
	net.Conn
	busy bool
}

// startOracleSocket serves svc on the unix socket at path until Close, or
// returns nil, with a warning, when the node must run without one: civnode
// oracle then cannot reach it while it runs.
func startOracleSocket(ctx context.Context, path string, svc oracleService, logger *slog.Logger) *oracleServer {
	ln, err := listenPrivateSocket(path, logger)
	if err != nil {
		logger.Warn("serving without the oracle socket, so civnode oracle cannot reach the node while it runs",
			"path", path, "err", err)
		return nil
	}
	s := &oracleServer{svc: svc, logger: logger, ln: ln, base: context.WithoutCancel(ctx),
		slots: make(chan struct{}, oracleMaxConns), done: make(chan struct{}), conns: map[*oracleConn]struct{}{}}
	s.wg.Add(1)
	go s.acceptLoop()
	logger.Info("listening on the oracle socket", "path", path)
	return s
}

func (s *oracleServer) acceptLoop() {
	defer s.wg.Done()
	for {
		select {
		case s.slots <- struct{}{}:
		case <-s.done:
			return
		}
		c, err := s.ln.Accept()
		if err != nil {
			<-s.slots
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// EMFILE and the like: wait a little rather than spin.
			s.logger.Warn("oracle socket accept", "err", err)
			select {
			case <-time.After(100 * time.Millisecond):
			case <-s.done:
				return
			}
			continue
		}
		oc := &oracleConn{Conn: c}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			<-s.slots
			return
		}
		s.conns[oc] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveConn(oc)
	}
}

// serveConn answers oc's requests in order until it is closed, idle, or the
// server stops.
func (s *oracleServer) serveConn(oc *oracleConn) {
	defer func() {
		s.mu.Lock()
		delete(s.conns, oc)
		s.mu.Unlock()
		oc.Close()
		<-s.slots
		s.wg.Done()
	}()
	br := bufio.NewReaderSize(oc, 64<<10)
	for {
		if !s.await(oc) {
			return
		}
		line, err := readLine(br, oracleRequestLimit)
		if errors.Is(err, errOracleRequestLarge) {
			s.answer(oc, oracleResponse{Error: &oracleError{Kind: "invalid", Code: "request_too_large", Message: err.Error()}})
			return
		}
		if err != nil {
			return // closed by the client, idle, or the server stops
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if !s.begin(oc) {
			e, _ := oracleErrorOf(errOracleStopping)
			s.answer(oc, oracleResponse{Error: &e})
			return
		}
		ok := s.answer(oc, s.handle(line))
		if !s.end(oc) || !ok {
			return
		}
	}
}

// await gives oc the idle timeout for its next request, unless the server is
// stopping. Under the lock, so that Close's wake-up deadline is never
// overwritten by this one.
func (s *oracleServer) await(oc *oracleConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.closed && oc.SetReadDeadline(time.Now().Add(oracleIdleTimeout)) == nil
}

// begin marks oc busy, unless the server is stopping.
func (s *oracleServer) begin(oc *oracleConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	oc.busy = !s.closed
	return oc.busy
}

// end marks oc idle and reports whether it may take another request.
func (s *oracleServer) end(oc *oracleConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	oc.busy = false
	return !s.closed
}

// answer writes one response line.
func (s *oracleServer) answer(oc *oracleConn, resp oracleResponse) bool {
	b, err := marshalPlain(resp)
	if err != nil {
		s.logger.Error("oracle socket: encode answer", "err", err)
		b, _ = marshalPlain(oracleResponse{Error: &oracleError{Kind: "internal", Code: "internal", Message: "internal error; see the node's log"}})
	}
	if err := oc.SetWriteDeadline(time.Now().Add(oracleWriteTimeout)); err != nil {
		return false
	}
	_, err = oc.Write(append(b, '\n'))
	return err == nil
}

// handle runs one request line.
func (s *oracleServer) handle(line []byte) oracleResponse {
	start := time.Now()
	ctx, cancel := context.WithTimeout(s.base, oracleRequestTimeout)
	defer cancel()
	var (
		req    oracleRequest
		result any
	)
	err := decodeStrict(line, &req)
	if err != nil {
		err = oracleJSONError("request", err)
	} else {
		result, err = s.dispatch(ctx, req)
	}
	var raw []byte
	if err == nil {
		raw, err = marshalPlain(result)
	}
	if err != nil {
		e, internal := oracleErrorOf(err)
		if internal {
			s.logger.Error("oracle request failed", "op", req.Op, "err", err)
		} else {
			s.logger.Debug("oracle request refused", "op", req.Op, "code", e.Code, "field", e.Field)
		}
		return oracleResponse{Error: &e}
	}
	s.logger.Debug("oracle request", "op", req.Op, "duration", time.Since(start))
	return oracleResponse{Result: raw}
}

// dispatch decodes req's args and runs its operation.
func (s *oracleServer) dispatch(ctx context.Context, req oracleRequest) (any, error) {
	args := func(v any) error {
		if len(req.Args) == 0 {
			return nil
		}
		if err := decodeStrict(req.Args, v); err != nil {
			return oracleJSONError("args", err)
		}
		return nil
	}
	switch req.Op {
	case oracleOpPublish:
		var in commands.PublishFeedInput
		if err := args(&in); err != nil {
			return nil, err
		}
		return s.svc.Publish(ctx, in)
	case oracleOpSubscribe:
		var in commands.SubscribeInput
		if err := args(&in); err != nil {
			return nil, err
		}
		return s.svc.Subscribe(ctx, in)
	case oracleOpPull:
		var in commands.PullInput
		if err := args(&in); err != nil {
			return nil, err
		}
		return s.svc.Pull(ctx, in)
	case oracleOpBalance:
		var in oracleBalanceArgs
		if err := args(&in); err != nil {
			return nil, err
		}
		bs, err := s.svc.Balances(ctx, in.Agent)
		return oracleBalances{Balances: bs}, err
	case oracleOpFeeds:
		if err := args(&struct{}{}); err != nil {
			return nil, err
		}
		fs, err := s.svc.Feeds(ctx)
		return oracleFeeds{Feeds: fs}, err
	case "":
		return nil, commands.Missing("op")
	default:
		return nil, &commands.Error{Kind: commands.KindInvalid, Code: "unknown_op", Field: "op",
			Message: fmt.Sprintf("unknown op %q: want publish, subscribe, pull, balance or feeds", req.Op)}
	}
}

// Arguments and results of the socket that are not the commands' own types.
type (
	oracleBalanceArgs struct {
		Agent string `json:"agent,omitempty"`
	}
	oracleBalances struct {
		Balances []oracleBalance `json:"balances"`
	}
	oracleFeeds struct {
		Feeds []oracleFeed `json:"feeds"`
	}
)

// Close stops the server: no new connection or request is taken, requests in
// flight finish and are answered, every connection is closed and the socket
// file removed. It may be called more than once, and on nil.
func (s *oracleServer) Close() error {
	if s == nil {
		return nil
	}
	var err error
	s.once.Do(func() {
		s.mu.Lock()
		s.closed = true
		close(s.done)
		for oc := range s.conns {
			if !oc.busy {
				// Wakes the read of an idle connection; a busy one ends after
				// its answer.
				_ = oc.SetReadDeadline(time.Unix(1, 0))
			}
		}
		s.mu.Unlock()
		if cerr := s.ln.Close(); cerr != nil {
			err = fmt.Errorf("close oracle socket: %w", cerr)
		}
		s.wg.Wait()
	})
	return err
}

// readLine reads one line of at most limit bytes, its newline excluded.
func readLine(br *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(line)+len(frag) > limit+1 {
			return nil, errOracleRequestLarge
		}
		line = append(line, frag...)
		switch {
		case err == nil:
			return bytes.TrimSuffix(line, []byte("\n")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}

// decodeStrict decodes b, one JSON value, into v by the rule the HTTP API holds
// request bodies to (wire.md §1): I-JSON (RFC 7493: valid UTF-8, no lone
// surrogate or noncharacter, no name twice, which a last-wins decoder would
// settle silently), member names matched exactly, unknown members and
// trailing data refused. Its errors are *civhttp.Error.
func decodeStrict(b []byte, v any) error { return civhttp.DecodeIJSON(b, v) }

// oracleJSONError is the answer to a request line or args (what) that
// decodeStrict refused: invalid_json, whatever the fault, naming the member at
// fault as the commands name their fields (args.as is as).
func oracleJSONError(what string, err error) error {
	e := &commands.Error{Kind: commands.KindInvalid, Code: "invalid_json", Message: what + ": " + err.Error()}
	var he *civhttp.Error
	if errors.As(err, &he) {
		e.Message, e.Field = what+": "+he.Message, strings.TrimPrefix(he.Field, "args.")
		if e.Field == "" && what == "args" {
			e.Field = "args"
		}
	}
	return e
}
