package projections

import (
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// Model is one read model as the node's tools see it: its name, the key space
// it keeps in the log's model space, how many events it could not apply, and
// what it holds in a few figures. Models lists them; the fold, the node's
// start-up warning, GET /v1/metrics and civnode replay all go through it, so a
// new model is one more entry there.
type Model struct {
	// Name names the model in logs, in /v1/metrics (the model label) and in
	// replay's report.
	Name string
	// Prefix starts every key the model keeps ("i/" for identities), so
	// the keys of a model are the range [Prefix, eventlog.PrefixEnd(Prefix)).
	Prefix string

	skipped []byte // the key of its skipped-event counter
	// skippedFigure names the skipped count in the model's summary.
	skippedFigure string
	fold          func(w writer, ev *eventlog.Event) error
	summary       func(src Source) ([]Figure, error)
}

// Figure is one named number (or flag) of a model's summary.
type Figure struct {
	Name  string
	Value any
}

// models are folded in this order, and reported in it.
var models = []Model{
	// The identities' skipped count is plain "skipped" in replay's report,
	// which names it so since before there were other models.
	{Name: "identities", Prefix: "i/", skipped: key(identitySkipped), skippedFigure: "skipped",
		fold: foldIdentity, summary: identitiesSummary},
	{Name: "missions", Prefix: "m/", skipped: key(missionSkipped), skippedFigure: "missions_skipped",
		fold: foldMission, summary: missionsSummary},
	{Name: "game", Prefix: "g/", skipped: key(gameSkipped), skippedFigure: "game_skipped",
		fold: foldGame, summary: gameSummary},
	{Name: "servicenet", Prefix: "s/", skipped: key(snSkipped), skippedFigure: "servicenet_skipped",
		fold: foldServicenet, summary: servicenetSummary},
	{Name: "oracle", Prefix: "o/", skipped: key(oracleSkipped), skippedFigure: "oracle_skipped",
		fold: foldOracle, summary: oracleSummary},
}

// Models returns every read model, in the order they fold an event. The
// slice is the caller's.
func Models() []Model { return append([]Model(nil), models...) }

// Skipped counts the events the model could not apply. It stays 0 on a chain
// written by civnode's commands; anything else is a bug to report.
func (m Model) Skipped(src Source) (uint64, error) { return skipped(src, m.skipped) }

// Summary is what the model holds, in a few figures ending with its skipped
// count: replay's report of the models it rebuilt, in order.
func (m Model) Summary(src Source) ([]Figure, error) {
	out, err := m.summary(src)
	if err != nil {
		return nil, err
	}
	n, err := m.Skipped(src)
	if err != nil {
		return nil, err
	}
	return append(out, Figure{m.skippedFigure, n}), nil
}

// Skipped returns every model's count of the events it could not apply, by
// model name, read from one durable view.
func Skipped(src Source) (map[string]uint64, error) {
	v, err := view(src)
	if err != nil {
		return nil, err
	}
	defer v.Close()
	out := make(map[string]uint64, len(models))
	for _, m := range models {
		n, err := counter(v, m.skipped)
		if err != nil {
			return nil, err
		}
		out[m.Name] = uint64(n)
	}
	return out, nil
}

func identitiesSummary(src Source) ([]Figure, error) {
	m, err := NewIdentities(src).Metrics()
	if err != nil {
		return nil, err
	}
	return []Figure{{"identities", m.Identities}, {"bindings", m.Bindings.Total},
		{"bindings_active", m.Bindings.Active}}, nil
}

func missionsSummary(src Source) ([]Figure, error) {
	m, err := NewMissions(src).Metrics()
	if err != nil {
		return nil, err
	}
	var treasury int64
	for _, v := range m.Treasuries {
		treasury += v
	}
	settled := m.ByState[events.StateSettled]
	return []Figure{{"missions", m.Total}, {"missions_open", m.Total - settled}, {"missions_settled", settled},
		{"credits_paid", m.Paid.AgentCredit}, {"treasury_credits", treasury}}, nil
}

func gameSummary(src Source) ([]Figure, error) {
	g := NewGame(src)
	starter, err := g.StarterInstalled()
	if err != nil {
		return nil, err
	}
	packs, err := g.Packs()
	if err != nil {
		return nil, err
	}
	return []Figure{{"starter_missions_installed", starter}, {"mission_packs_installed", len(packs)}}, nil
}

func servicenetSummary(src Source) ([]Figure, error) {
	m, err := NewServicenet(src).Metrics()
	if err != nil {
		return nil, err
	}
	return []Figure{{"servicenet_receipts", m.Receipts}, {"servicenet_receipts_open", m.Open},
		{"x402_payments", m.Payments}, {"x402_payments_settled", m.Settled}}, nil
}

func oracleSummary(src Source) ([]Figure, error) {
	feeds, err := NewOracle(src).Feeds()
	if err != nil {
		return nil, err
	}
	var subscriptions, pulls, earned int64
	for _, f := range feeds {
		subscriptions += f.Subscribers
		pulls += f.Pulls
		earned += f.Earned
	}
	return []Figure{{"feeds", len(feeds)}, {"feed_subscriptions", subscriptions}, {"feed_pulls", pulls},
		{"feed_credits", earned}}, nil
}
