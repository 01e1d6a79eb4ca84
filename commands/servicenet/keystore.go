package servicenet

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/civnode/civnode/internal/atomicfile"
)

// Payment-account keys as files: <dir>/<ref>.key holds the account's
// secp256k1 private key as lowercase hex and a newline, mode 0600, in a
// directory of mode 0700. A key is written once and never replaced: losing
// one loses whatever its address holds.

const keyFileSuffix = ".key"

// maxKeyFileSize bounds what Wallet reads: a key file is 65 bytes.
const maxKeyFileSize = 4096

var refPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// ValidRef reports whether ref can name a payment account. The alphabet
// keeps a ref a plain file name: no separator, no leading dot, no "..".
func ValidRef(ref string) bool { return refPattern.MatchString(ref) }

// KeyFileError is a payment account's key file the node will not sign with.
// Reason says why, and what to do, without the file's path, so it may be
// shown to a client; Error names the path too, for the node's own log.
type KeyFileError struct {
	Ref, Path, Reason string
}

func (e *KeyFileError) Error() string {
	return fmt.Sprintf("payment account %q: key file %s %s", e.Ref, e.Path, e.Reason)
}

// Keystore keeps payment-account keys in one directory.
type Keystore struct{ dir string }

// NewKeystore is the keystore in dir (<data-dir>/wallets). Nothing is
// touched until the first Create.
func NewKeystore(dir string) *Keystore { return &Keystore{dir: dir} }

func (k *Keystore) path(ref string) string { return filepath.Join(k.dir, ref+keyFileSuffix) }

// Create makes a fresh key for ref and returns its EIP-55 address. The key is
// written with atomicfile.Create, which links a synced temporary file to its
// name and fails rather than overwrites when the name exists, so two Creates
// racing for one ref leave exactly one key and a crash leaves none
// half-written.
func (k *Keystore) Create(ref string) (string, error) {
	if !ValidRef(ref) {
		return "", fmt.Errorf("create payment account %q: invalid ref", ref)
	}
	if err := os.MkdirAll(k.dir, 0o700); err != nil {
		return "", fmt.Errorf("create payment account %q: %w", ref, err)
	}
	final := k.path(ref)
	if _, err := os.Lstat(final); err == nil {
		return "", fmt.Errorf("create payment account %q: %w", ref, ErrAccountExists)
	}
	key, err := crypto.GenerateKey()
	if err != nil {
		return "", fmt.Errorf("create payment account %q: generate key: %w", ref, err)
	}
	content := hex.EncodeToString(crypto.FromECDSA(key)) + "\n"
	err = atomicfile.Create(final, []byte(content), 0o600)
	if errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("create payment account %q: %w", ref, ErrAccountExists)
	}
	if err != nil {
		return "", fmt.Errorf("create payment account %q: write key: %w", ref, err)
	}
	return crypto.PubkeyToAddress(key.PublicKey).Hex(), nil
}

// Wallet loads ref's key. Like ssh with a private key, it refuses a key file
// that group or others may read or write: the key may already be exposed,
// and the owner should know before it signs anything.
func (k *Keystore) Wallet(ref string) (Wallet, error) {
	w, err := k.load(ref)
	if err != nil {
		return nil, err
	}
	return w, nil
}

func (k *Keystore) load(ref string) (*EVMWallet, error) {
	if !ValidRef(ref) {
		return nil, fmt.Errorf("payment account %q: invalid ref", ref)
	}
	name := k.path(ref)
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("payment account %q: %w", ref, ErrAccountNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("payment account %q: %w", ref, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("payment account %q: %w", ref, err)
	}
	if !info.Mode().IsRegular() {
		return nil, &KeyFileError{Ref: ref, Path: name, Reason: "is not a regular file"}
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return nil, &KeyFileError{Ref: ref, Path: name, Reason: fmt.Sprintf(
			"has mode %04o and is accessible by group or others, so the key may already be exposed; it must be 0600 (run chmod 600 on it)", perm)}
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("payment account %q: read key file: %w", ref, err)
	}
	// The decoding errors are not wrapped: they would quote key material.
	raw, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(b) > maxKeyFileSize {
		return nil, &KeyFileError{Ref: ref, Path: name, Reason: "does not hold a hex secp256k1 key"}
	}
	key, err := crypto.ToECDSA(raw)
	if err != nil {
		return nil, &KeyFileError{Ref: ref, Path: name, Reason: "does not hold a valid secp256k1 key"}
	}
	return newEVMWallet(key), nil
}

// Address is ref's EIP-55 address.
func (k *Keystore) Address(ref string) (string, error) {
	w, err := k.load(ref)
	if err != nil {
		return "", err
	}
	return w.Address(), nil
}

// Refs lists the payment accounts, sorted; none when the directory does not
// exist yet.
func (k *Keystore) Refs() ([]string, error) {
	entries, err := os.ReadDir(k.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list payment accounts: %w", err)
	}
	var refs []string
	for _, e := range entries {
		ref, ok := strings.CutSuffix(e.Name(), keyFileSuffix)
		if ok && e.Type().IsRegular() && ValidRef(ref) {
			refs = append(refs, ref)
		}
	}
	sort.Strings(refs)
	return refs, nil
}
