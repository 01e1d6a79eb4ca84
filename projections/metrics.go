package projections

// Metrics aggregates the civilization layer (GET /v1/civilization/metrics). The
// by_* maps count identities by the value of a profile field; identities with the
// field unset are not counted there, so a map's sum can be below Identities.
type Metrics struct {
	Identities   int            `json:"identities"`
	ByFaction    map[string]int `json:"by_faction"`
	ByRole       map[string]int `json:"by_role"`
	ByStrategy   map[string]int `json:"by_strategy"`
	ByHomeSubnet map[string]int `json:"by_home_subnet"`
	// BySubnetMembership counts identities per subnet in subnet_memberships.
	BySubnetMembership map[string]int `json:"by_subnet_membership"`
	Bindings           BindingMetrics `json:"bindings"`
	// StatsTotals sums every identity's stats.
	StatsTotals Stats `json:"stats_totals"`
}

// BindingMetrics counts controller bindings.
type BindingMetrics struct {
	Total  int `json:"total"`
	Active int `json:"active"`
	// ByKind counts active bindings per controller_kind.
	ByKind map[string]int `json:"by_kind"`
	// Shared counts active bindings with ownership_scope shared.
	Shared int `json:"shared"`
}

// Metrics reads the aggregates from the model's counters: O(distinct values).
func (p *Identities) Metrics() (Metrics, error) {
	v, err := view(p.src)
	if err != nil {
		return Metrics{}, err
	}
	defer v.Close()
	m := Metrics{Bindings: BindingMetrics{}}
	for _, c := range []struct {
		name string
		to   *map[string]int
	}{
		{metricFaction, &m.ByFaction}, {metricRole, &m.ByRole}, {metricStrategy, &m.ByStrategy},
		{metricHome, &m.ByHomeSubnet}, {metricMember, &m.BySubnetMembership}, {metricKind, &m.Bindings.ByKind},
	} {
		if *c.to, err = counters(v, key(identityCount, c.name)); err != nil {
			return Metrics{}, err
		}
	}
	for _, c := range []struct {
		name string
		to   *int
	}{
		{metricIdentities, &m.Identities}, {metricBindings, &m.Bindings.Total},
		{metricActive, &m.Bindings.Active}, {metricShared, &m.Bindings.Shared},
	} {
		n, err := counter(v, key(identityCount, c.name, ""))
		if err != nil {
			return Metrics{}, err
		}
		*c.to = int(n)
	}
	if _, err := load(v, key(identityTotals), &m.StatsTotals); err != nil {
		return Metrics{}, err
	}
	return m, nil
}
