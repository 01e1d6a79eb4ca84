package commands_test

import (
	"bytes"
	"crypto/ed25519"
	"testing"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog"
)

func TestAgentKeyIsDerivedFromNodeKeyAndSalt(t *testing.T) {
	node := ed25519.NewKeyFromSeed(nodeSeed)
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	const salt = "00112233445566778899aabbccddeeff"

	k1, err := commands.AgentKey(node, salt)
	if err != nil {
		t.Fatal(err)
	}
	k2, _ := commands.AgentKey(node, salt)
	if !bytes.Equal(k1, k2) {
		t.Fatal("derivation is not deterministic")
	}
	k3, _ := commands.AgentKey(node, "ffeeddccbbaa99887766554433221100")
	k4, _ := commands.AgentKey(other, salt)
	if bytes.Equal(k1, k3) || bytes.Equal(k1, k4) || bytes.Equal(k1.Seed(), node.Seed()) {
		t.Fatal("different salts or node keys gave the same agent key, or the node key itself")
	}
	did, err := commands.AgentDID(node, salt)
	if err != nil {
		t.Fatal(err)
	}
	if want := eventlog.DIDKey(k1.Public().(ed25519.PublicKey)); did != want {
		t.Fatalf("AgentDID = %s, want %s", did, want)
	}
	// A signature by the derived key verifies against the DID's key.
	pub, err := eventlog.PublicKeyFromDID(did)
	if err != nil || !ed25519.Verify(pub, []byte("m"), ed25519.Sign(k1, []byte("m"))) {
		t.Fatal("signature by the agent key does not verify against its DID")
	}

	for _, bad := range []string{"", "00", "zz112233445566778899aabbccddeeff", salt + "00"} {
		if _, err := commands.AgentKey(node, bad); err == nil {
			t.Errorf("salt %q accepted", bad)
		}
	}
	if _, err := commands.AgentKey(nil, salt); err == nil {
		t.Error("missing node key accepted")
	}
}
