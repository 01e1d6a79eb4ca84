package localnode

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"time"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/logkey"
)

// DefaultRegistryURL is the official agent registry, {registry_url} of the
// spec: serve --registry-url's default. --registry-url "" runs the node
// without a registry.
const DefaultRegistryURL = "https://registry.civnode.net"

// registryLabel is how logs and reports name the registry of url.
func registryLabel(url string) string {
	if url == "" {
		return "none"
	}
	return url
}

// RegistryReadTimeout bounds one registry call of serve's proxy, and
// RegistryReadRetries the extra attempts of a read (agents, card, task). A
// read the registry never answers takes (1+RegistryReadRetries) attempts of
// RegistryReadTimeout and one backoff of at most 200 ms, about 40 s: inside the
// HTTP server's registry route timeout (60 s), so that a registry that hangs is
// a 504 registry_timeout, not the server's own 503. The client's default of 3
// retries would take 80 s, and every invoke reads the card first.
const (
	RegistryReadTimeout = 20 * time.Second
	RegistryReadRetries = 1
)

// openRegistry builds the registry client of serve. It does not contact the
// registry: a node whose registry is down starts and serves everything else,
// and the proxy answers 502 until the registry is back. The node's registry
// credential is <data-dir>/registry.credential, when the operator has put one
// there; without it the node still signs every request with its key.
// observe, if not nil, is told of every attempt (the node's metrics).
//
// An empty url turns the proxy off: openRegistry returns a nil Registry, and
// the node answers the registry routes 503 registry_not_configured and lists
// no servicenet MCP tools.
func openRegistry(d datadir.Dir, url string, key ed25519.PrivateKey, logger *slog.Logger, observe func(servicenet.Attempt)) (commands.Registry, error) {
	if url == "" {
		logger.Info(`no agent registry (--registry-url ""): the registry proxy is off`)
		return nil, nil
	}
	cred, err := datadir.ReadSecret(d.RegistryCredentialPath(), logger)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		logger.Info("no registry credential; registry requests carry only the node's signature", logkey.Path, d.RegistryCredentialPath())
	case err != nil:
		return nil, fmt.Errorf("read registry credential: %w", err)
	}
	c, err := servicenet.New(servicenet.Config{
		BaseURL:     url,
		Credential:  strings.TrimSpace(string(cred)),
		NodeDID:     eventlog.DIDKey(key.Public().(ed25519.PublicKey)),
		Sign:        func(msg []byte) []byte { return ed25519.Sign(key, msg) },
		ReadTimeout: RegistryReadTimeout,
		Retries:     RegistryReadRetries,
		Logger:      logger.With(logkey.Component, "registry"),
		Observe:     observe,
	})
	if err != nil {
		return nil, fmt.Errorf("--registry-url: %w", err)
	}
	return c, nil
}
