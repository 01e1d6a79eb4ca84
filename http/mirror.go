package http

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/civnode/civnode/witness"
)

// A mirror (civnode serve --mirror-of) follows its source beside the server
// and tells the server how that goes through a Mirror: GET /v1/transparency
// shows it under "mirror", GET /v1/ready answers 503 mirror_stopped once the
// mirror has stopped following on evidence, and the metrics carry it. The
// mirror serves the origin's witnessed checkpoint it holds as the origin
// serves its own (docs/mirrors.md).

// The states of a mirror's following (MirrorStatus.State).
const (
	// MirrorFollowing: the source's last answer was verified and stored.
	MirrorFollowing = "following"
	// MirrorRetrying: the source failed in a way that may pass (it did not
	// answer, answered 5xx, or its tree is not cosigned by the witnesses
	// required yet); the mirror serves what it holds and asks again with
	// back-off.
	MirrorRetrying = "retrying"
	// MirrorStopped: the source served evidence (a fork, a rollback,
	// another key, something that does not verify); the mirror follows no
	// more and serves the verified chain it holds, read-only, until an
	// operator acts.
	MirrorStopped = "stopped"
)

// MirrorStatus is how a mirror's following goes: the "mirror" object of GET
// /v1/transparency.
type MirrorStatus struct {
	// Source is the URL the mirror follows.
	Source string `json:"source"`
	State  string `json:"state"`
	// SourceTreeSize is the origin's tree size last seen at the source (its
	// seal's), TreeSize the size the mirror holds, Behind the difference
	// (never negative).
	SourceTreeSize int64 `json:"source_tree_size"`
	TreeSize       int64 `json:"tree_size"`
	Behind         int64 `json:"behind"`
	// FailedAttempts counts the attempts that failed in a row.
	FailedAttempts int `json:"failed_attempts"`
	// LastError is the last attempt's failure, null once one succeeds;
	// Evidence the file the problem that stopped the mirror is kept in.
	LastError *string `json:"last_error"`
	Evidence  *string `json:"evidence"`
}

// Mirror is the follower of a mirror's source, as the server reads it.
type Mirror interface {
	// MirrorStatus is the following's status now.
	MirrorStatus() MirrorStatus
	// Witnessed is the origin's newest witnessed checkpoint the mirror
	// holds, nil while there is none.
	Witnessed() *witness.Witnessed
}

// errMirrorNotWitnessed answers GET /v1/transparency/checkpoint?witnessed=1
// on a mirror that holds no witnessed checkpoint of the origin.
var errMirrorNotWitnessed = &Error{Status: http.StatusNotFound, Code: codeNotWitnessed,
	Message: "this mirror holds no checkpoint of the origin with cosignatures yet; GET /v1/transparency shows how its following goes"}

// notReadyMirrorStopped: the mirror stopped following its source on
// evidence; it serves what it verified, but no longer what the origin
// serves.
const notReadyMirrorStopped = "mirror_stopped"

// mirrorStopped reports whether the server is a mirror that stopped
// following.
func (s *Server) mirrorStopped() bool {
	return s.mirror != nil && s.mirror.MirrorStatus().State == MirrorStopped
}

// mirrorStatus is the "mirror" object of GET /v1/transparency, nil on a
// node of its own.
func (s *Server) mirrorStatus() *MirrorStatus {
	if s.mirror == nil {
		return nil
	}
	st := s.mirror.MirrorStatus()
	return &st
}

// mirrorCollector reports a mirror's following at scrape time.
type mirrorCollector struct {
	m                  Mirror
	following, behind  *prometheus.Desc
	sourceSize, failed *prometheus.Desc
}

func newMirrorCollector(m Mirror) *mirrorCollector {
	return &mirrorCollector{
		m: m,
		following: prometheus.NewDesc("civnode_mirror_following",
			"1 while the mirror follows its source (following or retrying), 0 once it stopped on evidence.", nil, nil),
		behind: prometheus.NewDesc("civnode_mirror_behind_events",
			"Events of the origin's tree last seen at the source that the mirror does not hold yet.", nil, nil),
		sourceSize: prometheus.NewDesc("civnode_mirror_source_tree_size",
			"The origin's tree size last seen at the source.", nil, nil),
		failed: prometheus.NewDesc("civnode_mirror_failed_attempts",
			"Attempts to follow the source that failed in a row; 0 after one succeeds.", nil, nil),
	}
}

func (c *mirrorCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.following
	ch <- c.behind
	ch <- c.sourceSize
	ch <- c.failed
}

func (c *mirrorCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.m.MirrorStatus()
	following := 1.0
	if st.State == MirrorStopped {
		following = 0
	}
	ch <- prometheus.MustNewConstMetric(c.following, prometheus.GaugeValue, following)
	ch <- prometheus.MustNewConstMetric(c.behind, prometheus.GaugeValue, float64(st.Behind))
	ch <- prometheus.MustNewConstMetric(c.sourceSize, prometheus.GaugeValue, float64(st.SourceTreeSize))
	ch <- prometheus.MustNewConstMetric(c.failed, prometheus.GaugeValue, float64(st.FailedAttempts))
}
