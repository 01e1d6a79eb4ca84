package servicenet

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/civnode/civnode/internal/testtool"
)

// The interop check: viem, the library the x402 reference client signs
// with, must recover our signer from our signature. It needs node and
// testdata/viem/node_modules; .ci/run installs them with
// `npm ci --prefix commands/servicenet/testdata/viem`.

const viemDir = "testdata/viem"

// requireViem skips when node or viem is missing, except in CI, where a
// missing interop check is a failure rather than a silent pass.
func requireViem(t *testing.T) string {
	t.Helper()
	node := testtool.Need(t, "node", "install Node.js 20 or later")
	if _, err := os.Stat(filepath.Join(viemDir, "node_modules", "viem", "package.json")); err != nil {
		testtool.Missing(t, "viem is not installed: run `npm ci --prefix commands/servicenet/"+viemDir+"`")
	}
	return node
}

// viemInput is verify.mjs's stdin.
type viemInput struct {
	Domain struct {
		Name              string `json:"name"`
		Version           string `json:"version"`
		ChainID           string `json:"chainId"`
		VerifyingContract string `json:"verifyingContract"`
	} `json:"domain"`
	Message   wireAuthorization `json:"message"`
	Signature string            `json:"signature"`
	Address   string            `json:"address"`
}

type viemResult struct {
	Recovered string `json:"recovered"`
	Valid     bool   `json:"valid"`
	Hash      string `json:"hash"`
}

// viemVerify runs verify.mjs on a signed authorization and returns its
// verdict and exit status.
func viemVerify(t *testing.T, node string, a TransferAuthorization, sig []byte, address string) (viemResult, int) {
	t.Helper()
	var in viemInput
	in.Domain.Name, in.Domain.Version = a.TokenName, a.TokenVersion
	in.Domain.ChainID, in.Domain.VerifyingContract = a.ChainID.String(), a.VerifyingContract
	in.Message = wireAuthorization{
		From: a.From, To: a.To, Value: a.Value.String(),
		ValidAfter: a.ValidAfter.String(), ValidBefore: a.ValidBefore.String(),
		Nonce: "0x" + hex.EncodeToString(a.Nonce[:]),
	}
	in.Signature, in.Address = "0x"+hex.EncodeToString(sig), address
	stdin, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "verify.mjs")
	cmd.Dir = viemDir
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	if err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("run verify.mjs: %v", err)
		}
		code = exit.ExitCode()
	}
	if code == 2 || code < 0 {
		t.Fatalf("verify.mjs failed (exit %d): %s", code, stderr.String())
	}
	var res viemResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("verify.mjs printed %q: %v (stderr %s)", out, err, stderr.String())
	}
	return res, code
}

func TestViemRecoversTransferAuthorization(t *testing.T) {
	node := requireViem(t)
	w, err := NewEVMKey()
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePaymentRequired(headerWith("PAYMENT-REQUIRED", b64(v2Doc(v2Requirement))), nil)
	if err != nil {
		t.Fatal(err)
	}
	req := mustRequirement(t, p, "eip155:84532")
	var nonce [32]byte
	copy(nonce[:], []byte("civnode viem interop nonce 32 by"))
	a, err := NewAuthorization(req, w.Address(), time.Now(), nonce)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := w.SignTransferAuthorization(t.Context(), a)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := TransferAuthorizationHash(a)
	if err != nil {
		t.Fatal(err)
	}

	res, code := viemVerify(t, node, a, sig, w.Address())
	if code != 0 || !res.Valid {
		t.Errorf("viem refused our signature: exit %d, %+v", code, res)
	}
	if res.Recovered != w.Address() {
		t.Errorf("viem recovered %s, want %s", res.Recovered, w.Address())
	}
	if want := "0x" + hex.EncodeToString(digest); res.Hash != want {
		t.Errorf("viem's digest %s, ours %s", res.Hash, want)
	}

	// One unit more than was signed: viem must refuse it, and both sides
	// must recover the same stranger from it.
	tampered := a
	tampered.Value = new(big.Int).Add(a.Value, big.NewInt(1))
	res, code = viemVerify(t, node, tampered, sig, w.Address())
	if code == 0 || res.Valid {
		t.Errorf("viem accepted a tampered value: exit %d, %+v", code, res)
	}
	ours, err := RecoverTransferAuthorization(tampered, sig)
	if err != nil {
		t.Fatal(err)
	}
	if ours == w.Address() {
		t.Error("our recovery accepted a tampered value")
	}
	if !strings.EqualFold(ours, res.Recovered) {
		t.Errorf("tampered: we recover %s, viem %s", ours, res.Recovered)
	}
}

// TestViemFixedVector runs the pinned vector through viem too, so a change
// of viem's encoding would show here rather than as a stale constant.
func TestViemFixedVector(t *testing.T) {
	node := requireViem(t)
	sig, _ := hex.DecodeString(vectorSignature)
	res, code := viemVerify(t, node, vectorAuthorization(t), sig, vectorAddress)
	if code != 0 || !res.Valid || res.Recovered != vectorAddress {
		t.Errorf("viem on the fixed vector: exit %d, %+v", code, res)
	}
	if res.Hash != "0x"+vectorDigest {
		t.Errorf("viem digest %s, pinned %s", res.Hash, vectorDigest)
	}
}
