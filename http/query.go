package http

import (
	"net/url"
	"strings"
	"time"

	"github.com/civnode/civnode/eventlog"
)

// Bounds of the limit query parameter (docs/api.md).
const (
	defaultLimit = 100
	maxLimit     = 1000
)

// queryValue returns the one value of a query parameter. An empty value counts as
// absent, which lets clients build URLs from forms with blank fields; a repeated
// parameter is rejected because either reading of it would be a guess.
func queryValue(q url.Values, name string) (string, error) {
	vs := q[name]
	switch {
	case len(vs) == 0:
		return "", nil
	case len(vs) > 1:
		return "", invalidQuery(name, "%s is given %d times; give it at most once", name, len(vs))
	}
	return vs[0], nil
}

// queryLimit parses limit: an integer 1..1000, default 100.
func queryLimit(q url.Values) (int, error) {
	v, err := queryValue(q, "limit")
	if err != nil || v == "" {
		return defaultLimit, err
	}
	n := 0
	// Digits only: no sign, no spaces, and a length cap so the sum cannot overflow.
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' || i >= 9 {
			return 0, invalidField("limit", "limit must be an integer from 1 to %d", maxLimit)
		}
		n = n*10 + int(c-'0')
	}
	if n < 1 || n > maxLimit {
		return 0, invalidField("limit", "limit must be an integer from 1 to %d", maxLimit)
	}
	return n, nil
}

// querySince parses since as RFC 3339 with any offset and any number of fractional
// digits, in UTC. The zero time means absent.
func querySince(q url.Values) (time.Time, error) {
	v, err := queryValue(q, "since")
	if err != nil || v == "" {
		return time.Time{}, err
	}
	t, perr := time.Parse(time.RFC3339Nano, v)
	if perr != nil && strings.Contains(v, " ") {
		// An unescaped "+02:00" offset arrives as " 02:00"; a space is never
		// otherwise valid, so reading it as "+" cannot change a valid value.
		t, perr = time.Parse(time.RFC3339Nano, strings.ReplaceAll(v, " ", "+"))
	}
	if perr != nil {
		return time.Time{}, invalidField("since", "since must be an RFC 3339 timestamp such as 2026-11-21T23:05:25.123456Z")
	}
	return t.UTC(), nil
}

// queryFilter parses a type or action filter: a dot-notation name matched exactly,
// or a prefix ending in ".*".
func queryFilter(q url.Values, name string) (string, error) {
	v, err := queryValue(q, name)
	if err != nil || v == "" {
		return "", err
	}
	if !eventlog.ValidTypeFilter(v) {
		return "", invalidField(name, "%s must be a dot-notation name such as mission.created, or a prefix such as mission.*", name)
	}
	return v, nil
}

// maxQueryNameEcho bounds how much of a parameter name an error repeats back.
const maxQueryNameEcho = 64

// checkQuery parses a raw query string strictly. url.ParseQuery, and so
// URL.Query, drops a pair it cannot parse and keeps the rest, which turns
// ?type=payment.settled; into no filter at all and answers with every record.
// Here a pair with a semicolon or a bad %-escape, and a parameter given twice,
// is 400 invalid_query naming the parameter, so a handler that then reads
// URL.Query sees exactly what the client sent.
func checkQuery(raw string) error {
	if raw == "" {
		return nil
	}
	seen := make(map[string]bool, 4)
	for pair := range strings.SplitSeq(raw, "&") {
		if pair == "" {
			continue
		}
		rawName, rawValue, _ := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(rawName)
		if err != nil {
			return invalidQuery(echoName(rawName), "query parameter name %q is not validly %%-escaped", echoName(rawName))
		}
		if strings.Contains(pair, ";") {
			return invalidQuery(echoName(name), "query parameter %s holds a semicolon; separate parameters with & and escape a literal ; as %%3B", echoName(name))
		}
		if _, err := url.QueryUnescape(rawValue); err != nil {
			return invalidQuery(echoName(name), "the value of %s is not validly %%-escaped", echoName(name))
		}
		if seen[name] {
			return invalidQuery(echoName(name), "%s is given more than once; give it at most once", echoName(name))
		}
		seen[name] = true
	}
	return nil
}

// echoName bounds a client's parameter name for an error message.
func echoName(name string) string {
	if len(name) > maxQueryNameEcho {
		return strings.ToValidUTF8(name[:maxQueryNameEcho], "") + "…"
	}
	return strings.ToValidUTF8(name, "\uFFFD")
}
