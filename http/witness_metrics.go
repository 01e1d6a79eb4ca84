package http

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/civnode/civnode/witness"
)

// observeCosignature counts a cosignature this node gave as a witness.
func (m *Metrics) observeCosignature() { m.cosigned.Inc() }

// submissionResults are the results a witness submission is counted under
// (witness.Status.Submissions), every one reported from the start.
var submissionResults = []string{"cosigned", "conflict", "refused", "error"}

// witnessCollector reports the node's witnesses (serve --witness) at scrape
// time, from the submitter's status lines.
type witnessCollector struct {
	w                                *witness.Submitter
	submissions, cosigned, witnessed *prometheus.Desc
	quorum                           *prometheus.Desc
}

func newWitnessCollector(w *witness.Submitter) *witnessCollector {
	return &witnessCollector{
		w: w,
		submissions: prometheus.NewDesc("civnode_witness_submissions_total",
			"Checkpoints submitted to each witness, by result: cosigned, conflict (409: the witness holds another size), refused (another 4xx), error (no answer, 5xx, a bad cosignature).",
			[]string{"witness", "result"}, nil),
		cosigned: prometheus.NewDesc("civnode_witness_cosigned_tree_size",
			"Tree size of the newest checkpoint each witness cosigned.", []string{"witness"}, nil),
		witnessed: prometheus.NewDesc("civnode_witness_witnessed_tree_size",
			"Tree size of the newest checkpoint with a quorum of cosignatures; 0 while there is none.", nil, nil),
		quorum: prometheus.NewDesc("civnode_witness_quorum", "Cosignatures a checkpoint needs to be witnessed (--witness-quorum).", nil, nil),
	}
}

func (c *witnessCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.submissions
	ch <- c.cosigned
	ch <- c.witnessed
	ch <- c.quorum
}

func (c *witnessCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.w.Statuses() {
		for _, result := range submissionResults {
			ch <- prometheus.MustNewConstMetric(c.submissions, prometheus.CounterValue, float64(st.Submissions[result]), st.Name, result)
		}
		ch <- prometheus.MustNewConstMetric(c.cosigned, prometheus.GaugeValue, float64(st.CosignedSize), st.Name)
	}
	var size int64
	if w := c.w.Witnessed(); w != nil {
		size = w.TreeSize
	}
	ch <- prometheus.MustNewConstMetric(c.witnessed, prometheus.GaugeValue, float64(size))
	ch <- prometheus.MustNewConstMetric(c.quorum, prometheus.GaugeValue, float64(c.w.Quorum()))
}
