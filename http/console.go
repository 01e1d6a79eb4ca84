package http

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/civnode/civnode/internal/logkey"
	"github.com/julienschmidt/httprouter"
)

// consoleFS holds the supervision console (docs/console.md): plain HTML, CSS
// and ES modules, embedded so that the node serves them with no build step.
// The files hold no data. The page asks for a token, keeps it in the tab's
// session storage and reads everything it shows from the API with it, so the
// files are the one public path besides health and the node proof.
//
//go:embed console
var consoleFS embed.FS

// consoleCSP is the console's Content-Security-Policy, which replaces the
// server's default (secheaders.go) on its files. Scripts and styles come only
// from the console's own files, so an injected <script>, an on* attribute or a
// style attribute does not run; the page reaches only its own origin (the API,
// and the stream, whose ws: and wss: 'self' covers); it cannot be framed or
// post a form, so the login form can never put the token in a URL. Trusted
// Types with no policy refuses every HTML-string sink (innerHTML and the
// like): the console builds its DOM from nodes and text, so a value from the
// node is never parsed as markup.
const consoleCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; " +
	"require-trusted-types-for 'script'; trusted-types 'none'"

// consoleTypes are the content types of the console's files, by extension,
// written out rather than taken from mime.TypeByExtension, which reads the
// host's tables.
var consoleTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8", // RFC 9239
	".svg":  "image/svg+xml",
}

// consoleFile is one embedded file, ready to serve.
type consoleFile struct {
	body  []byte
	ctype string
	etag  string // strong: a hash of body
}

// consoleFiles are the console's files by name ("index.html"), read once.
// consoleLoadErr is why they could not be: a file without a known type is a
// mistake of the build, which every console test catches; a node built so
// serves everything but the console and logs why (consoleRoutes).
var consoleFiles, consoleLoadErr = loadConsole(consoleFS)

func loadConsole(fsys fs.FS) (map[string]consoleFile, error) {
	entries, err := fs.ReadDir(fsys, "console")
	if err != nil {
		return nil, fmt.Errorf("read console files: %w", err)
	}
	files := make(map[string]consoleFile, len(entries))
	for _, e := range entries {
		if e.IsDir() {
			return nil, fmt.Errorf("console file %s is a directory; the console is flat", e.Name())
		}
		ctype, ok := consoleTypes[path.Ext(e.Name())]
		if !ok {
			return nil, fmt.Errorf("console file %s has no known content type", e.Name())
		}
		body, err := fs.ReadFile(fsys, "console/"+e.Name())
		if err != nil {
			return nil, fmt.Errorf("read console file %s: %w", e.Name(), err)
		}
		sum := sha256.Sum256(body)
		files[e.Name()] = consoleFile{body: body, ctype: ctype,
			etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`}
	}
	if _, ok := files["index.html"]; !ok {
		return nil, fmt.Errorf("the console has no index.html")
	}
	return files, nil
}

// consoleRoutes registers the supervision console: GET /v1/console/ and its
// files, without a token, and GET /v1/console, which an operator types, as a
// redirect to it (the router adds no trailing slashes by itself).
func (s *Server) consoleRoutes() {
	if consoleLoadErr != nil {
		s.logger.Error("the supervision console is not served", logkey.Err, consoleLoadErr)
		return
	}
	s.handle(http.MethodGet, "/v1/console", s.handleConsoleRedirect, routePublic)
	s.handle(http.MethodGet, "/v1/console/*file", s.handleConsole, routePublic)
}

// consoleLocation is where GET /v1/console sends the browser.
const consoleLocation = "/v1/console/"

func (s *Server) handleConsoleRedirect(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	b, err := marshalJSON(map[string]string{"location": consoleLocation})
	if err != nil {
		return err
	}
	w.Header().Set("Location", consoleLocation)
	writeBody(w, http.StatusMovedPermanently, b)
	return nil
}

// handleConsole serves one of the console's files; "/" is index.html. Every
// file is revalidated on each load (no-cache with a strong ETag), so a node
// upgraded under an open tab serves the new console at the next reload and an
// unchanged one costs a 304.
func (s *Server) handleConsole(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	name := strings.TrimPrefix(ps.ByName("file"), "/")
	if name == "" {
		name = "index.html"
	}
	f, ok := consoleFiles[name]
	if !ok {
		return errNotFound
	}
	h := w.Header()
	h.Set("Content-Security-Policy", consoleCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	// For browsers that predate frame-ancestors.
	h.Set("X-Frame-Options", "DENY")
	// No other origin may open the console in a window it can reach, nor load
	// its files as resources of its own.
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", f.etag)
	if etagMatches(r.Header.Get("If-None-Match"), f.etag) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	h.Set("Content-Type", f.ctype)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(f.body)
	return nil
}

// etagMatches reports whether an If-None-Match header names etag: "*", or
// etag in its list, compared weakly as RFC 9110 §13.1.2 has it (a W/ prefix is
// ignored).
func etagMatches(header, etag string) bool {
	for candidate := range strings.SplitSeq(header, ",") {
		candidate = strings.TrimSpace(candidate)
		if candidate == "*" || strings.TrimPrefix(candidate, "W/") == etag {
			return true
		}
	}
	return false
}
