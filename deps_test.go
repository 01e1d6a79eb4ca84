package civnode_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/civnode/civnode/"

// ownImports says which of our packages each package may import (docs/architecture.md:
// arrows point inward, eventlog is the centre). Subpackages inherit the rule of
// their top-level package and may import their parent.
var ownImports = map[string][]string{
	"eventlog":    {},
	"projections": {"eventlog", "statemap"},
	"commands":    {"eventlog"},
	"stream":      {"eventlog"},
	"http":        {"commands", "projections", "eventlog", "stream", "witness", "statemap"},
	"cmd":         {"*"},
	// The oracle's unix-socket channel runs the commands' inputs and errors
	// and answers a log that cannot write as unavailable; it decodes its lines
	// by the one rule for request bodies, internal/ijson, not through http.
	"oraclesock": {"commands", "eventlog"},
	// The transparency tools read and check what the log signs; they reach a
	// node's API with plain net/http, not through package http.
	"transparency": {"eventlog", "witness", "statemap"},
	"witness":      {"eventlog"},
	// The state map's tree and proofs: the node, the offline verifier and
	// mirrors all use it, so it leans on nothing of ours.
	"statemap": {},
	// internal holds helpers that any package may use (the one atomic file
	// writer, the slog level floor, the median ops rate, the same-origin
	// redirect rule of outbound clients, the I-JSON codec); it imports
	// nothing of ours.
	"internal": {},
	// docs/examples holds programs an observer copies: they may lean on
	// nothing of ours.
	"docs": {},
	// bench/peers holds harnesses that measure other systems beside the
	// node, each a module of its own so that no peer becomes a dependency:
	// they lean on nothing of ours.
	"bench": {},
}

// thirdParty keeps heavy dependencies at the edge that wraps them.
var thirdParty = map[string][]string{
	"github.com/cockroachdb/pebble":       {"eventlog"},
	"github.com/nats-io/":                 {"stream"},
	"github.com/julienschmidt/httprouter": {"http"},
	"github.com/coder/websocket":          {"http", "stream", "cmd", "transparency"}, // cmd: the bench's stream clients; transparency: prove reads an event from the stream
	"github.com/modelcontextprotocol/":    {"http"},
	"github.com/google/jsonschema-go":     {"http"}, // the MCP tools' input schemas
	"github.com/spf13/cobra":              {"cmd"},  // cobra/doc too: civnode man
	"github.com/spf13/pflag":              {"cmd"},
	// serve's config file.
	"go.yaml.in/yaml":                {"cmd"},
	"github.com/schollz/progressbar": {"cmd"},
	// One canonical JSON encoder: eventlog's, which a fuzzer holds equal to
	// gowebpki/jcs; everyone else asks eventlog (CanonicalObject, Canonicalize).
	"github.com/gowebpki/jcs":   {"eventlog"},
	"golang.org/x/time/rate":    {"http"},
	"github.com/google/uuid":    {"commands", "eventlog"},
	"github.com/mr-tron/base58": {"eventlog"},
	// The log's signers (batchsign.go): the standard library's own Ed25519
	// group code, published as a module, because ed25519.Sign inverts a field
	// element for each signature and a batch shares one inversion among all of
	// its signatures, which stay byte for byte ed25519.Sign's; the write path
	// is faster for it in process and over HTTP (docs/benchmarks.md).
	"filippo.io/edwards25519": {"eventlog"},
	// JSON a client sends (request bodies, the oracle socket's lines) is
	// decoded, as I-JSON, by internal/ijson only.
	"github.com/go-json-experiment/json": {"internal"},
	// x402 payments: EIP-712 hashing and secp256k1 signing, behind the
	// registry client's Wallet interface.
	"github.com/ethereum/go-ethereum": {"commands", "cmd"},
	// An invoke's input is checked against its agent's schema by the command.
	"github.com/santhosh-tekuri/jsonschema": {"commands"},
	// GET /v1/metrics: the registry lives with the server that serves it;
	// the log and the registry client report through plain hooks.
	"github.com/prometheus/": {"http"},
	// The Merkle tree, its proofs, tiles and signed checkpoints (docs/transparency.md): kept and signed by the log, checked by the observer's commands.
	"golang.org/x/mod/sumdb": {"eventlog", "http", "cmd", "transparency", "witness", "docs"},
}

// TestImportPolicy reads the imports of every non-test Go file and checks them
// against the tables above.
func TestImportPolicy(t *testing.T) {
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		if dir == "." {
			return nil
		}
		top := strings.Split(dir, "/")[0]
		allowed, known := ownImports[top]
		if !known {
			t.Errorf("%s: top-level package %q is not in the design's package map", path, top)
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if own, ok := strings.CutPrefix(p, module); ok {
				target := strings.Split(own, "/")[0]
				if target != top && target != "internal" && !contains(allowed, target) && !contains(allowed, "*") {
					t.Errorf("%s imports %s: %s may import only %v", path, p, top, allowed)
				}
				continue
			}
			for prefix, owners := range thirdParty {
				if strings.HasPrefix(p, prefix) && !contains(owners, top) {
					t.Errorf("%s imports %s: only %v may", path, p, owners)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no Go files checked")
	}
}

// TestEveryPackageHasDoc: each package directory has a doc.go.
func TestEveryPackageHasDoc(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "docs") {
			return filepath.SkipDir
		}
		goFiles, _ := filepath.Glob(filepath.Join(path, "*.go"))
		nonTest := 0
		for _, g := range goFiles {
			if !strings.HasSuffix(g, "_test.go") {
				nonTest++
			}
		}
		if nonTest > 0 {
			if _, err := os.Stat(filepath.Join(path, "doc.go")); err != nil {
				t.Errorf("package %s has no doc.go", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
