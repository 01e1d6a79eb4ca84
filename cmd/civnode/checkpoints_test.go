package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/stream"
)

// serve publishes the tree's signed checkpoint on civnode.<node>.checkpoints
// as the tree grows: a NATS subscriber on --nats-listen gets a checkpoint
// that verifies under the node's key and covers an event appended after it
// subscribed, without asking the node for it.
func TestServePublishesCheckpoints(t *testing.T) {
	n := startNodeArgs(t, t.TempDir(), "--nats-listen", "127.0.0.1:0")
	var st stateBody
	getJSON(t, n.url+"/v1/state", n.token, 200, &st)
	var status struct {
		NATS struct {
			Listen string `json:"listen"`
		} `json:"nats"`
	}
	getJSON(t, n.url+"/v1/client/network/status", n.token, 200, &status)
	nc, err := nats.Connect("nats://"+status.NATS.Listen, nats.Timeout(waitTimeout), nats.Token(n.token))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync(stream.CheckpointsSubject(st.Identity.NodeDID))
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, n.url+"/v1/civilization/bootstrap-identity",
		bytes.NewReader([]byte(`{"display_name":"Ada","public_id":"ada"}`)))
	req.Header.Set("Authorization", "Bearer "+n.token)
	resp, err := httpClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("bootstrap: %v %v", resp, err)
	}
	resp.Body.Close()
	var after stateBody
	getJSON(t, n.url+"/v1/state", n.token, 200, &after)

	pub, err := base64.StdEncoding.DecodeString(st.Identity.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitTimeout)
	for {
		msg, err := sub.NextMsg(time.Until(deadline))
		if err != nil {
			t.Fatalf("no checkpoint covering seq %d: %v", after.Chain.Seq, err)
		}
		head, err := eventlog.OpenCheckpoint(msg.Data, st.Identity.NodeDID, ed25519.PublicKey(pub))
		if err != nil {
			t.Fatalf("a published checkpoint does not verify: %v\n%s", err, msg.Data)
		}
		if got := msg.Header.Get(stream.HeaderTreeSize); got != strconv.FormatInt(head.Size, 10) {
			t.Fatalf("header %s %q, note size %d", stream.HeaderTreeSize, got, head.Size)
		}
		if uint64(head.Size) >= after.Chain.Seq {
			return
		}
	}
}
