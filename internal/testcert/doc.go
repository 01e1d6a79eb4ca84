// Package testcert makes the certificates that tests of TLS need: a test
// certificate authority and leaf certificates it signs, for servers on
// loopback (127.0.0.1 and localhost) and for clients, as PEM files or
// tls.Certificate values.
package testcert
