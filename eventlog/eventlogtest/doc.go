// Package eventlogtest holds helpers for tests that need a real store in a
// state the log itself never writes, such as a damaged sstable
// ([FlipInSSTable]). Like
// net/http/httptest, it is imported by tests only.
package eventlogtest
