package transparency

import (
	"strings"
	"testing"
)

// TestS3Location: s3://BUCKET/PREFIX names a bucket and a prefix (perhaps
// empty); anything else is refused. Where names an object by its s3:// URL.
func TestS3Location(t *testing.T) {
	for _, c := range []struct{ loc, bucket, prefix string }{
		{"s3://b/p", "b", "p"},
		{"s3://b/chains/node-1/", "b", "chains/node-1"},
		{"s3://b", "b", ""},
		{"s3://b/", "b", ""},
	} {
		b, p, err := parseS3(c.loc)
		if err != nil || b != c.bucket || p != c.prefix {
			t.Errorf("parseS3(%q) = %q, %q, %v; want %q, %q", c.loc, b, p, err, c.bucket, c.prefix)
		}
	}
	for _, loc := range []string{"s3://", "s3:///p", "s3://b/a//c", "s3://b/../c", "s3://b/a/./c", "/dir"} {
		if _, _, err := parseS3(loc); err == nil {
			t.Errorf("parseS3(%q) passed", loc)
		}
	}
	tg, err := NewS3Target("s3://b/chains/n1", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if got := tg.Where("tile/0/000"); got != "s3://b/chains/n1/tile/0/000" {
		t.Errorf("Where: %q", got)
	}
}

// TestS3EndpointSecrets: an endpoint that is no http(s) URL is refused
// without repeating it (it may carry credentials), and the target's
// messages never hold the secret key.
func TestS3EndpointSecrets(t *testing.T) {
	const secret = "s3cr3t-value"
	env := map[string]string{"AWS_ENDPOINT_URL": "ftp://user:" + secret + "@host", "AWS_SECRET_ACCESS_KEY": secret, "AWS_ACCESS_KEY_ID": "id"}
	_, err := NewS3Target("s3://b/p", func(k string) string { return env[k] })
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("an ftp endpoint: %v", err)
	}
	env["AWS_ENDPOINT_URL"] = "http://127.0.0.1:1"
	env["AWS_ENDPOINT_URL_S3"] = "http://127.0.0.1:2"
	tg, err := NewS3Target("s3://bkt/p", func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	// Nothing listens: the error names the object, never the secret.
	_, err = tg.Read(t.Context(), CheckpointFile)
	if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "s3://bkt/p/checkpoint") {
		t.Fatalf("read from an endpoint that does not answer: %v", err)
	}
	if !strings.Contains(err.Error(), "127.0.0.1:2") {
		t.Errorf("the S3-specific endpoint was not the one used: %v", err)
	}
}

// TestContentType: the types a static host serves the layout's files as.
func TestContentType(t *testing.T) {
	for rel, want := range map[string]string{
		CheckpointFile: "text/plain", VerifierKeyFile: "text/plain", SealFile: "application/json",
		BundlePath(3, 256): "application/x-ndjson", "events/x001/234.p/9": "application/x-ndjson",
		"tile/0/000": "application/octet-stream", "tile/2/000.p/1": "application/octet-stream",
	} {
		if got := ContentType(rel); got != want {
			t.Errorf("ContentType(%q) = %q, want %q", rel, got, want)
		}
	}
}
