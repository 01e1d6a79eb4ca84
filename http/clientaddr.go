package http

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// proxyTrust knows the reverse proxies whose word on a client's address the
// node takes (Options.TrustedProxies). A request from any other peer is its
// own client, whatever its Forwarded or X-Forwarded-For say, since any
// client can write those headers.
type proxyTrust struct {
	prefixes []netip.Prefix
}

// newProxyTrust keeps prefixes in their canonical form (their IPv4-mapped
// IPv6 form unmapped), so that a peer matches however it is written.
func newProxyTrust(prefixes []netip.Prefix) proxyTrust {
	var out []netip.Prefix
	for _, p := range prefixes {
		a := p.Addr()
		bits := p.Bits()
		if a.Is4In6() {
			a, bits = a.Unmap(), max(0, bits-96)
		}
		if q, err := a.WithZone("").Prefix(bits); err == nil {
			out = append(out, q)
		}
	}
	return proxyTrust{prefixes: out}
}

// trusts reports whether a is the address of a trusted proxy.
func (t proxyTrust) trusts(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	for _, p := range t.prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// peerTrusted reports whether the peer remote (IP:port, as
// http.Request.RemoteAddr) is a trusted proxy.
func (t proxyTrust) peerTrusted(remote string) bool {
	if len(t.prefixes) == 0 {
		return false
	}
	ap, err := netip.ParseAddrPort(remote)
	return err == nil && t.trusts(ap.Addr())
}

// clientAddr is the address of the client that sent r, which every
// per-address rule keys on (clientAddress) and the logs and audit entries
// show: r.RemoteAddr, unless its peer is a trusted proxy and the request
// names the client. Then it is the right-most hop of Forwarded's for= (or,
// without one, of X-Forwarded-For) that is not itself a trusted proxy: hops
// to its left were written by the client and prove nothing. A hop that is no
// IP address (RFC 7239's "unknown" or an obfuscated name) leaves the proxy
// as the client, the one address the node can vouch for.
func (t proxyTrust) clientAddr(r *http.Request) string {
	if !t.peerTrusted(r.RemoteAddr) {
		return r.RemoteAddr
	}
	hops := forwardedFor(r.Header.Values("Forwarded"))
	if len(hops) == 0 {
		hops = xForwardedFor(r.Header.Values("X-Forwarded-For"))
	}
	if len(hops) == 0 {
		return r.RemoteAddr
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := hopAddr(hops[i])
		if !ok {
			return r.RemoteAddr
		}
		if !t.trusts(a) || i == 0 {
			return a.String()
		}
	}
	return r.RemoteAddr // not reached: the loop returns at i == 0
}

// forwardedFor lists the for= values of Forwarded header lines (RFC 7239),
// in order, quotes removed.
func forwardedFor(lines []string) []string {
	var hops []string
	for _, line := range lines {
		for _, elem := range splitQuoted(line, ',') {
			for _, pair := range splitQuoted(elem, ';') {
				name, value, ok := strings.Cut(strings.TrimSpace(pair), "=")
				if !ok || !strings.EqualFold(strings.TrimSpace(name), "for") {
					continue
				}
				value = strings.TrimSpace(value)
				if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
					value = strings.ReplaceAll(value[1:len(value)-1], `\`, "")
				}
				hops = append(hops, value)
			}
		}
	}
	return hops
}

// xForwardedFor lists the hops of X-Forwarded-For header lines, in order.
func xForwardedFor(lines []string) []string {
	var hops []string
	for _, line := range lines {
		for hop := range strings.SplitSeq(line, ",") {
			if hop = strings.TrimSpace(hop); hop != "" {
				hops = append(hops, hop)
			}
		}
	}
	return hops
}

// splitQuoted splits s at sep outside double-quoted strings.
func splitQuoted(s string, sep byte) []string {
	var parts []string
	quoted, escaped, start := false, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case escaped:
			escaped = false
		case quoted && c == '\\':
			escaped = true
		case c == '"':
			quoted = !quoted
		case !quoted && c == sep:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

// hopAddr parses one hop: an IP address, IPv4:port, [IPv6] or [IPv6]:port.
func hopAddr(hop string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(hop); err == nil {
		return a.Unmap().WithZone(""), true
	}
	host := hop
	if h, _, err := net.SplitHostPort(hop); err == nil {
		host = h
	} else if strings.HasPrefix(hop, "[") && strings.HasSuffix(hop, "]") {
		host = hop[1 : len(hop)-1]
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}

// clientAddr is the address of the client that sent r (proxyTrust.clientAddr).
func (s *Server) clientAddr(r *http.Request) string {
	return s.auth.proxies.clientAddr(r)
}
