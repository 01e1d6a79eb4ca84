package oraclesock

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/internal/logkey"
)

// Server serves the socket: each request line runs on its Service.
type Server struct {
	svc    Service
	logger *slog.Logger
	ln     *net.UnixListener
	// base is the context of every request: not canceled when Serve's is, so
	// that a stop lets requests in flight finish.
	base  context.Context
	slots chan struct{}
	done  chan struct{}

	wg     sync.WaitGroup // the accept loop and every connection
	mu     sync.Mutex
	conns  map[*conn]struct{}
	closed bool
	once   sync.Once
}

// conn is one connection; busy while it runs a request.
type conn struct {
	net.Conn
	busy bool
}

// Serve serves svc on ln until Close, which also closes ln. Requests run under
// a context that carries ctx's values but not its cancellation: Close, not
// ctx, stops the server.
func Serve(ctx context.Context, ln *net.UnixListener, svc Service, logger *slog.Logger) *Server {
	s := &Server{svc: svc, logger: logger, ln: ln, base: context.WithoutCancel(ctx),
		slots: make(chan struct{}, MaxConns), done: make(chan struct{}), conns: map[*conn]struct{}{}}
	s.wg.Add(1)
	go s.acceptLoop()
	return s
}

func (s *Server) acceptLoop() {
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
			s.logger.Warn("oracle socket accept", logkey.Err, err)
			select {
			case <-time.After(100 * time.Millisecond):
			case <-s.done:
				return
			}
			continue
		}
		oc := &conn{Conn: c}
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
func (s *Server) serveConn(oc *conn) {
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
		line, err := readLine(br, RequestLimit)
		if errors.Is(err, errRequestLarge) {
			s.answer(oc, Response{Error: &Failure{Kind: "invalid", Code: "request_too_large", Message: err.Error()}})
			return
		}
		if err != nil {
			return // closed by the client, idle, or the server stops
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if !s.begin(oc) {
			f, _ := ErrorOf(ErrStopping)
			s.answer(oc, Response{Error: &f})
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
func (s *Server) await(oc *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.closed && oc.SetReadDeadline(time.Now().Add(IdleTimeout)) == nil
}

// begin marks oc busy, unless the server is stopping.
func (s *Server) begin(oc *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	oc.busy = !s.closed
	return oc.busy
}

// end marks oc idle and reports whether it may take another request.
func (s *Server) end(oc *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	oc.busy = false
	return !s.closed
}

// answer writes one response line.
func (s *Server) answer(oc *conn, resp Response) bool {
	b, err := Marshal(resp)
	if err != nil {
		s.logger.Error("oracle socket: encode answer", logkey.Err, err)
		b, _ = Marshal(Response{Error: &Failure{Kind: "internal", Code: "internal", Message: "internal error; see the node's log"}})
	}
	if err := oc.SetWriteDeadline(time.Now().Add(WriteTimeout)); err != nil {
		return false
	}
	_, err = oc.Write(append(b, '\n'))
	return err == nil
}

// handle runs one request line.
func (s *Server) handle(line []byte) Response {
	start := time.Now()
	ctx, cancel := context.WithTimeout(s.base, RequestTimeout)
	defer cancel()
	var (
		req    Request
		result any
	)
	err := decodeStrict(line, &req)
	if err != nil {
		err = jsonError("request", err)
	} else {
		result, err = s.dispatch(ctx, req)
	}
	var raw []byte
	if err == nil {
		raw, err = Marshal(result)
	}
	if err != nil {
		f, internal := ErrorOf(err)
		if internal {
			s.logger.Error("oracle request failed", logkey.Op, req.Op, logkey.Err, err)
		} else {
			s.logger.Debug("oracle request refused", logkey.Op, req.Op, logkey.Code, f.Code, logkey.Field, f.Field)
		}
		return Response{Error: &f}
	}
	s.logger.Debug("oracle request", logkey.Op, req.Op, logkey.Duration, time.Since(start))
	return Response{Result: raw}
}

// dispatch decodes req's args and runs its operation.
func (s *Server) dispatch(ctx context.Context, req Request) (any, error) {
	args := func(v any) error {
		if len(req.Args) == 0 {
			return nil
		}
		if err := decodeStrict(req.Args, v); err != nil {
			return jsonError("args", err)
		}
		return nil
	}
	switch req.Op {
	case opPublish:
		var in commands.PublishFeedInput
		if err := args(&in); err != nil {
			return nil, err
		}
		return s.svc.Publish(ctx, in)
	case opSubscribe:
		var in commands.SubscribeInput
		if err := args(&in); err != nil {
			return nil, err
		}
		return s.svc.Subscribe(ctx, in)
	case opPull:
		var in commands.PullInput
		if err := args(&in); err != nil {
			return nil, err
		}
		return s.svc.Pull(ctx, in)
	case opBalance:
		var in BalanceArgs
		if err := args(&in); err != nil {
			return nil, err
		}
		bs, err := s.svc.Balances(ctx, in.Agent)
		return BalanceList{Balances: bs}, err
	case opFeeds:
		if err := args(&struct{}{}); err != nil {
			return nil, err
		}
		fs, err := s.svc.Feeds(ctx)
		return FeedList{Feeds: fs}, err
	case "":
		return nil, commands.Missing("op")
	default:
		return nil, &commands.Error{Kind: commands.KindInvalid, Code: "unknown_op", Field: "op",
			Message: fmt.Sprintf("unknown op %q: want publish, subscribe, pull, balance or feeds", req.Op)}
	}
}

// Close stops the server: no new connection or request is taken, requests in
// flight finish and are answered, every connection is closed and the socket
// file removed. It may be called more than once, and on nil.
func (s *Server) Close() error {
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
