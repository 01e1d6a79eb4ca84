package transparency

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Target is an S3-compatible bucket that loc, s3://BUCKET/PREFIX, names;
// each file of the layout is the object PREFIX/<its path>, so the bucket's
// public URL of PREFIX serves what a publish directory would, to mirrors
// and restore --published alike. It is configured as the AWS tools are,
// through getenv: the endpoint from AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL
// (an http:// one is plain HTTP; none: AWS's), the credentials from
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN (none:
// anonymous), the region from AWS_REGION or AWS_DEFAULT_REGION; addressing
// is path-style, which every S3-compatible store serves. The secrets appear
// in no message.
//
// A PUT that S3 acknowledged is durable and visible, so Sync has nothing to
// do: Publish's order (every tile and bundle acknowledged before the seal
// and the checkpoint are sent) is the crash-safe one. Two publishers of
// one prefix are not kept apart: each node publishes to a prefix of its own.
func NewS3Target(loc string, getenv func(string) string) (Target, error) {
	bucket, prefix, err := parseS3(loc)
	if err != nil {
		return nil, err
	}
	endpoint := getenv("AWS_ENDPOINT_URL_S3")
	if endpoint == "" {
		endpoint = getenv("AWS_ENDPOINT_URL")
	}
	region := getenv("AWS_REGION")
	if region == "" {
		region = getenv("AWS_DEFAULT_REGION")
	}
	host, secure := "s3.amazonaws.com", true
	if endpoint != "" {
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			// The value is not repeated: it may carry credentials.
			return nil, errors.New("AWS_ENDPOINT_URL(_S3) must be an http:// or https:// URL of the S3 endpoint")
		}
		host, secure = u.Host, u.Scheme == "https"
	}
	creds := credentials.NewStaticV4(getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY"), getenv("AWS_SESSION_TOKEN"))
	c, err := minio.New(host, &minio.Options{Creds: creds, Secure: secure, Region: region, BucketLookup: minio.BucketLookupPath})
	if err != nil {
		return nil, fmt.Errorf("the S3 endpoint %s: %w", host, err)
	}
	return &s3Target{c: c, bucket: bucket, prefix: prefix}, nil
}

// parseS3 splits s3://BUCKET/PREFIX; the prefix may be empty.
func parseS3(loc string) (bucket, prefix string, err error) {
	rest, ok := strings.CutPrefix(loc, "s3://")
	if !ok {
		return "", "", fmt.Errorf("%q is no s3://BUCKET/PREFIX", loc)
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	prefix = strings.Trim(prefix, "/")
	if bucket == "" || (prefix != "" && path.Clean(prefix) != prefix) || strings.HasPrefix(prefix, "..") {
		return "", "", fmt.Errorf("%q is no s3://BUCKET/PREFIX", loc)
	}
	return bucket, prefix, nil
}

type s3Target struct {
	c              *minio.Client
	bucket, prefix string
}

func (s *s3Target) key(rel string) string {
	if s.prefix == "" {
		return rel
	}
	return s.prefix + "/" + rel
}

func (s *s3Target) Where(rel string) string { return "s3://" + s.bucket + "/" + s.key(rel) }

func (s *s3Target) Lock(ctx context.Context) (func(), error) {
	return func() {}, nil
}

func (s *s3Target) Read(ctx context.Context, rel string) ([]byte, error) {
	obj, err := s.c.GetObject(ctx, s.bucket, s.key(rel), minio.GetObjectOptions{})
	if err != nil {
		return nil, s.err("read", rel, err)
	}
	defer obj.Close()
	b, err := io.ReadAll(obj)
	if err != nil {
		if r := minio.ToErrorResponse(err); r.Code == "NoSuchKey" || r.StatusCode == http.StatusNotFound {
			return nil, nil
		}
		return nil, s.err("read", rel, err)
	}
	return b, nil
}

// Put always sends: reading an object back to compare costs as much as
// writing it, and a PUT of the same bytes changes nothing a reader sees.
func (s *s3Target) Put(ctx context.Context, rel string, data []byte) (bool, error) {
	_, err := s.c.PutObject(ctx, s.bucket, s.key(rel), bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{ContentType: ContentType(rel), DisableMultipart: true})
	if err != nil {
		return false, s.err("write", rel, err)
	}
	return true, nil
}

func (s *s3Target) Sync(context.Context) error { return nil }

func (s *s3Target) err(verb, rel string, err error) error {
	return fmt.Errorf("%s %s: %w", verb, s.Where(rel), err)
}

// ContentType is the type a static host serves the published file rel
// as: the checkpoint and the verifier key are text, the seal JSON, a bundle
// NDJSON, a tile bytes.
func ContentType(rel string) string {
	switch {
	case rel == CheckpointFile, rel == VerifierKeyFile:
		return "text/plain"
	case rel == SealFile:
		return "application/json"
	case strings.HasPrefix(rel, "events/"):
		return "application/x-ndjson"
	default:
		return "application/octet-stream"
	}
}
