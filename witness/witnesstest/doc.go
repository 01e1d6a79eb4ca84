// Package witnesstest holds a cosignature/v1 signer that dates its
// cosignatures by a clock of the test's own (NewDatedCosigner), for tests of
// witnesses whose clocks are wrong: the witness itself signs with
// transparency-dev/formats/note, which dates every cosignature by time.Now.
// DatedCosigner writes the bytes C2SP tlog-cosignature specifies, apart from
// formats, so the witness's tests also hold the two equal. Like
// net/http/httptest, it is imported by tests only.
package witnesstest
