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

// Metrics computes the aggregates. It walks every identity: O(identities).
func (p *Identities) Metrics() Metrics {
	p.mu.RLock()
	defer p.mu.RUnlock()
	m := Metrics{
		Identities: len(p.order), ByFaction: map[string]int{}, ByRole: map[string]int{},
		ByStrategy: map[string]int{}, ByHomeSubnet: map[string]int{}, BySubnetMembership: map[string]int{},
		Bindings: BindingMetrics{ByKind: map[string]int{}},
	}
	count := func(to map[string]int, v *string) {
		if v != nil {
			to[*v]++
		}
	}
	for _, id := range p.order {
		count(m.ByFaction, id.profile.Faction)
		count(m.ByRole, id.profile.Role)
		count(m.ByStrategy, id.profile.Strategy)
		count(m.ByHomeSubnet, id.profile.HomeSubnetID)
		for _, s := range id.subnets {
			m.BySubnetMembership[s]++
		}
		if b := id.binding; b != nil {
			m.Bindings.Total++
			if b.Active {
				m.Bindings.Active++
				m.Bindings.ByKind[b.ControllerKind]++
				if b.OwnershipScope == "shared" {
					m.Bindings.Shared++
				}
			}
		}
		m.StatsTotals.Credit += id.stats.Credit
		m.StatsTotals.Reputation += id.stats.Reputation
		m.StatsTotals.Capacity += id.stats.Capacity
		m.StatsTotals.MissionsCompleted += id.stats.MissionsCompleted
	}
	return m
}
