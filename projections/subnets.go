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
func (p *Identities) Subnet(subnetID string) (SubnetSummary, error) {
	v, err := view(p.src)
	if err != nil {
		return SubnetSummary{}, err
	}
	defer v.Close()
	homes, err := counter(v, key(identityCount, metricHome, subnetID))
	if err != nil {
		return SubnetSummary{}, err
	}
	members, err := counter(v, key(identityCount, metricMember, subnetID))
	if err != nil {
		return SubnetSummary{}, err
	}
	return SubnetSummary{SubnetID: subnetID, HomeIdentities: int(homes), MemberIdentities: int(members)}, nil
}

// Subnets returns the summary of every subnet some identity names, by subnet id.
func (p *Identities) Subnets() ([]SubnetSummary, error) {
	v, err := view(p.src)
	if err != nil {
		return nil, err
	}
	defer v.Close()
	homes, err := counters(v, key(identityCount, metricHome))
	if err != nil {
		return nil, err
	}
	members, err := counters(v, key(identityCount, metricMember))
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(homes)+len(members))
	for s := range homes {
		ids = append(ids, s)
	}
	for s := range members {
		if _, dup := homes[s]; !dup {
			ids = append(ids, s)
		}
	}
	sort.Strings(ids)
	out := make([]SubnetSummary, len(ids))
	for i, s := range ids {
		out[i] = SubnetSummary{SubnetID: s, HomeIdentities: homes[s], MemberIdentities: members[s]}
	}
	return out, nil
}
