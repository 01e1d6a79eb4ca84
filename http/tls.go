package http

import (
	"crypto/tls"
	"net"
	"net/http"
)

// TLS is served beneath the server's own connection wrappers: TLSListener
// decrypts each connection as it is accepted, so that the connection caps,
// the request-head scan of connlimit.go and the JSON rewrite of net/http's own
// error answers (protocol.go) all see the plain HTTP stream, as on a plain
// listener, and a connection over the cap is answered inside TLS.
//
// net/http therefore never sees a *tls.Conn, and would not switch to HTTP/2
// when ALPN chose it. The decrypted stream of a client that negotiated "h2"
// starts with HTTP/2's connection preface, so a server over a TLS listener
// also accepts HTTP/2 with prior knowledge (Protocols.UnencryptedHTTP2): it
// serves exactly the connections that ALPN sent to HTTP/2, and only ever
// behind TLS. The control socket, merged into the same server, is local and
// may speak it too.

// alpnProtocols are offered to clients in the order of preference: HTTP/2,
// then HTTP/1.1 (WebSocket upgrades, such as GET /v1/stream, ask for it).
var alpnProtocols = []string{"h2", "http/1.1"}

// tlsListener is a listener that TLSListener made.
type tlsListener struct{ net.Listener }

// TLSListener serves ln over TLS as config says (its certificates, or
// GetCertificate, and the client authentication), with HTTP/2 and HTTP/1.1
// offered by ALPN. Give it, alone or merged (MergeListeners), to Serve.
func TLSListener(ln net.Listener, config *tls.Config) net.Listener {
	c := config.Clone()
	c.NextProtos = alpnProtocols
	return tlsListener{tls.NewListener(ln, c)}
}

// servedProtocols is the http.Server's Protocols for ln: nil (net/http's
// default) for plain listeners; HTTP/1 and HTTP/2 as ALPN negotiated it when
// ln is, or merges, a TLSListener.
func servedProtocols(ln net.Listener) *http.Protocols {
	if !holdsTLS(ln) {
		return nil
	}
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetHTTP2(true)
	p.SetUnencryptedHTTP2(true)
	return p
}

// holdsTLS says whether ln is, or merges, a TLSListener.
func holdsTLS(ln net.Listener) bool {
	switch v := ln.(type) {
	case tlsListener:
		return true
	case *MergedListener:
		for _, l := range v.lns {
			if holdsTLS(l) {
				return true
			}
		}
	}
	return false
}
