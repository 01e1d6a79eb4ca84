package stream

import "errors"

var (
	// ErrSlowConsumer ends a Subscription that could not be kept without a gap:
	// its buffer was full when an event arrived, or NATS dropped messages on the
	// way to it. Its consumer resumes from the log after the last seq it saw.
	ErrSlowConsumer = errors.New("slow consumer")
	// ErrClosed ends every Subscription when the server stops, and is what
	// Subscribe returns after Close.
	ErrClosed = errors.New("closed")
)

// ErrNoTokenCheck refuses a NATS port without a way to check its clients'
// tokens: the port never serves a client that HTTP would answer 401.
var ErrNoTokenCheck = errors.New("start nats: a listen port needs a token check")

// ErrTLSFiles is a port certificate and key that cannot be served: a file
// missing or unreadable, or a key that is not the certificate's.
var ErrTLSFiles = errors.New("nats tls")
