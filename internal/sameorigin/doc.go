// Package sameorigin is the redirect rule of the node's outbound HTTP
// clients (the witness submitter and the observer and mirror client):
// [Redirects] follows a redirect only to the scheme, host and port of the
// first request ([Same]), and only so many in a row. What a client sends (a checkpoint, a
// token) goes only where the operator named, and what it reads comes only from
// there. An upgrade from http to https is another scheme and port, so it is
// refused too: the operator gives the https URL instead.
package sameorigin
