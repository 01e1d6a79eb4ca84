package stream_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/stream"
)

// An observer follows a node over NATS: any NATS client subscribes to
// civnode.<node>.events.> on the node's --nats-listen port or on the hub the
// node joined with --nats-leaf. docs/streaming.md shows the same client as a
// program of its own.
func Example_followOverNATS() {
	// The node: serve --nats-listen 127.0.0.1:0, reduced to its parts.
	pub, key, _ := ed25519.GenerateKey(nil)
	did := eventlog.DIDKey(pub)
	// The port takes the node's tokens, as HTTP does; here one observer's.
	const observerToken = "observer-secret"
	tokens := func(token string) (string, bool) { return "observer-1", token == observerToken }
	st, err := stream.Start(stream.Options{NodeDID: did, Listen: "127.0.0.1:0", Authenticate: tokens,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	chain, err := eventlog.Open(eventlog.Options{InMemory: true, Key: key, OnCommit: st.Publish})
	if err != nil {
		log.Fatal(err)
	}
	defer chain.Close()

	// The observer.
	nc, err := nats.Connect("nats://"+st.Status().NATS.Listen, nats.Token(observerToken))
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("civnode." + did + ".events.>")
	if err != nil {
		log.Fatal(err)
	}
	_ = nc.Flush() // the subscription is in place before the node writes

	_, _ = chain.Append(context.Background(),
		eventlog.Draft{Type: "mission.created", Payload: map[string]string{"mission_id": "m1"}},
		eventlog.Draft{Type: "mission.accepted", Payload: map[string]string{"mission_id": "m1"}})

	for range 2 {
		m, err := sub.NextMsg(10 * time.Second)
		if err != nil {
			log.Fatal(err)
		}
		var ev eventlog.Event // the message is the event JSON exactly as stored
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			log.Fatal(err)
		}
		fmt.Println(m.Header.Get("Civnode-Seq"), ev.Type, string(ev.Payload))
	}
	// Output:
	// 2 mission.created {"mission_id":"m1"}
	// 3 mission.accepted {"mission_id":"m1"}
}
