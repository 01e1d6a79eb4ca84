package servicenet

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/crypto"
)

func TestKeystoreCreate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wallets")
	ks := NewKeystore(dir)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("NewKeystore touched the disk: %v", err)
	}
	addr, err := ks.Create("ops")
	if err != nil {
		t.Fatal(err)
	}

	info, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode().Perm(); got != 0o700 {
		t.Errorf("directory mode %04o, want 0700", got)
	}
	name := filepath.Join(dir, "ops.key")
	info, err = os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode().Perm(); got != 0o600 {
		t.Errorf("key file mode %04o, want 0600", got)
	}
	content, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}\n$`).Match(content) {
		t.Errorf("key file is not 64 lowercase hex digits and a newline (%d bytes)", len(content))
	}
	key, err := crypto.HexToECDSA(strings.TrimSpace(string(content)))
	if err != nil {
		t.Fatal(err)
	}
	if want := crypto.PubkeyToAddress(key.PublicKey).Hex(); addr != want {
		t.Errorf("Create returned %s, the file's key is %s", addr, want)
	}
	if _, err := parseAddress(addr); err != nil || addr == strings.ToLower(addr) {
		t.Errorf("address %s is not EIP-55 checksummed (%v)", addr, err)
	}

	w, err := ks.Wallet("ops")
	if err != nil {
		t.Fatal(err)
	}
	if w.Address() != addr {
		t.Errorf("Wallet address %s, want %s", w.Address(), addr)
	}
	if got, err := ks.Address("ops"); err != nil || got != addr {
		t.Errorf("Address = %s, %v; want %s", got, err, addr)
	}

	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want only ops.key", names)
	}
}

func TestKeystoreCreateNeverOverwrites(t *testing.T) {
	ks := NewKeystore(filepath.Join(t.TempDir(), "wallets"))
	addr, err := ks.Create("ops")
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(ks.dir, "ops.key"))
	if _, err := ks.Create("ops"); !errors.Is(err, ErrAccountExists) {
		t.Fatalf("second Create: %v, want ErrAccountExists", err)
	}
	after, _ := os.ReadFile(filepath.Join(ks.dir, "ops.key"))
	if string(before) != string(after) {
		t.Error("second Create changed the key")
	}
	if got, _ := ks.Address("ops"); got != addr {
		t.Errorf("address changed to %s", got)
	}
}

// TestKeystoreCreateRace: creates racing for one ref leave one key, and every
// loser is told the account exists.
func TestKeystoreCreateRace(t *testing.T) {
	ks := NewKeystore(filepath.Join(t.TempDir(), "wallets"))
	const n = 8
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		winners  []string
		failures []error
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			addr, err := ks.Create("race")
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failures = append(failures, err)
				return
			}
			winners = append(winners, addr)
		}()
	}
	wg.Wait()
	if len(winners) != 1 {
		t.Fatalf("%d creates succeeded, want 1", len(winners))
	}
	for _, err := range failures {
		if !errors.Is(err, ErrAccountExists) {
			t.Errorf("loser's error %v, want ErrAccountExists", err)
		}
	}
	if got, _ := ks.Address("race"); got != winners[0] {
		t.Errorf("stored key is %s, the winner was told %s", got, winners[0])
	}
	entries, _ := os.ReadDir(ks.dir)
	if len(entries) != 1 {
		t.Errorf("%d directory entries left, want 1", len(entries))
	}
}

func TestKeystoreRefusesExposedKey(t *testing.T) {
	ks := NewKeystore(filepath.Join(t.TempDir(), "wallets"))
	if _, err := ks.Create("ops"); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(ks.dir, "ops.key")
	content, _ := os.ReadFile(name)
	secret := strings.TrimSpace(string(content))
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o660, 0o602, 0o400 | 0o020} {
		if err := os.Chmod(name, mode); err != nil {
			t.Fatal(err)
		}
		_, err := ks.Wallet("ops")
		if err == nil {
			t.Errorf("mode %04o: key loaded", mode)
			continue
		}
		if !strings.Contains(err.Error(), "group or others") || !strings.Contains(err.Error(), "0600") {
			t.Errorf("mode %04o: unclear error %q", mode, err)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("mode %04o: error quotes the key", mode)
		}
		if _, err := ks.Address("ops"); err == nil {
			t.Errorf("mode %04o: Address read the key", mode)
		}
	}
	if err := os.Chmod(name, 0o400); err != nil {
		t.Fatal(err)
	}
	if _, err := ks.Wallet("ops"); err != nil {
		t.Errorf("mode 0400: %v", err)
	}
}

func TestKeystoreNotFound(t *testing.T) {
	ks := NewKeystore(filepath.Join(t.TempDir(), "wallets"))
	_, err := ks.Wallet("nobody")
	if !errors.Is(err, ErrAccountNotFound) {
		t.Fatalf("error %v, want ErrAccountNotFound", err)
	}
	if !strings.Contains(err.Error(), `"nobody"`) {
		t.Errorf("error %q does not name the ref", err)
	}
	if _, err := ks.Address("nobody"); !errors.Is(err, ErrAccountNotFound) {
		t.Errorf("Address: %v, want ErrAccountNotFound", err)
	}
	if _, err := ks.Wallet("../etc/passwd"); err == nil || errors.Is(err, ErrAccountNotFound) {
		t.Errorf("invalid ref: %v, want an invalid-ref error", err)
	}
	if _, err := ks.Create("Bad/Ref"); err == nil {
		t.Error("created an invalid ref")
	}
}

func TestKeystoreCorruptKeyIsNotQuoted(t *testing.T) {
	ks := NewKeystore(t.TempDir())
	for name, content := range map[string]string{
		"nothex":  "zz" + strings.Repeat("7", 62) + "\n",
		"short":   strings.Repeat("7", 40) + "\n",
		"zero":    strings.Repeat("0", 64) + "\n",
		"overN":   strings.Repeat("f", 64) + "\n",
		"toolong": strings.Repeat("7", 5000),
	} {
		if err := os.WriteFile(filepath.Join(ks.dir, name+".key"), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := ks.Wallet(name)
		if err == nil {
			t.Errorf("%s: loaded", name)
			continue
		}
		if strings.Contains(err.Error(), content[:12]) || strings.Contains(err.Error(), "'z'") {
			t.Errorf("%s: error quotes the file: %q", name, err)
		}
	}
}

func TestKeystoreRefs(t *testing.T) {
	ks := NewKeystore(filepath.Join(t.TempDir(), "wallets"))
	if refs, err := ks.Refs(); err != nil || len(refs) != 0 {
		t.Fatalf("Refs before any Create = %v, %v", refs, err)
	}
	for _, ref := range []string{"ops", "a.b", "0-z"} {
		if _, err := ks.Create(ref); err != nil {
			t.Fatal(err)
		}
	}
	// Strays are not accounts.
	_ = os.WriteFile(filepath.Join(ks.dir, ".ops.tmp-1"), nil, 0o600)
	_ = os.WriteFile(filepath.Join(ks.dir, "README"), nil, 0o600)
	_ = os.Mkdir(filepath.Join(ks.dir, "dir.key"), 0o700)
	refs, err := ks.Refs()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"0-z", "a.b", "ops"}; !reflect.DeepEqual(refs, want) {
		t.Errorf("Refs = %v, want %v", refs, want)
	}
}

func TestValidRef(t *testing.T) {
	for ref, want := range map[string]bool{
		"ops":                         true,
		"a":                           true,
		"0":                           true,
		"team.payments_2-eu":          true,
		strings.Repeat("a", 64):       true,
		strings.Repeat("a", 65):       false,
		"":                            false,
		".hidden":                     false,
		"-flag":                       false,
		"_x":                          false,
		"Ops":                         false,
		"a/b":                         false,
		"..":                          false,
		"a b":                         false,
		"a\n":                         false,
		"é":                           false,
		"ops.key/../../etc":           false,
		strings.Repeat("é", 10):       false,
		"a" + string(rune(0)):         false,
		"x:y":                         false,
		"trailing.dot.":               true,
		"with..dots":                  true,
		"9lives":                      true,
		"a" + strings.Repeat("-", 63): true,
	} {
		if got := ValidRef(ref); got != want {
			t.Errorf("ValidRef(%q) = %v, want %v", ref, got, want)
		}
	}
}
