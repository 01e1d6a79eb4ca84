package projections

import "sort"

// SubnetSummary counts the identities of one subnet.
type SubnetSummary struct {
	SubnetID string `json:"subnet_id"`
	// HomeIdentities is how many identities have it as home_subnet_id.
	HomeIdentities int `json:"home_identities"`
	// MemberIdentities is how many identities list it in subnet_memberships.
	MemberIdentities int `json:"member_identities"`
}

// Subnet returns the summary of subnetID; a subnet no identity names has zero
// counts.
func (p *Identities) Subnet(subnetID string) SubnetSummary {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return SubnetSummary{SubnetID: subnetID, HomeIdentities: p.homes[subnetID], MemberIdentities: p.members[subnetID]}
}

// Subnets returns the summary of every subnet some identity names, by subnet id.
func (p *Identities) Subnets() []SubnetSummary {
	p.mu.RLock()
	defer p.mu.RUnlock()
	ids := make([]string, 0, len(p.homes)+len(p.members))
	for s := range p.homes {
		ids = append(ids, s)
	}
	for s := range p.members {
		if _, dup := p.homes[s]; !dup {
			ids = append(ids, s)
		}
	}
	sort.Strings(ids)
	out := make([]SubnetSummary, len(ids))
	for i, s := range ids {
		out[i] = SubnetSummary{SubnetID: s, HomeIdentities: p.homes[s], MemberIdentities: p.members[s]}
	}
	return out
}
