package commands

import (
	"slices"
)

// Reserved slugs. A public_id is also the publisher name of
// the identity's missions, and a subnet's government publishes under the
// subnet's id: an agent holding "genesis" could publish missions that
// ?publisher=genesis mixes with the government's, and one named "treasury" or
// "admin" speaks with an authority it does not have. So no new claim of a slug,
// at bootstrap or on a rename, may take
//
//   - the id of a subnet this node governs (IdentityOptions.Governs, from
//     --governs; the owner token's Governs as well);
//   - a faction of the game catalog, a body an agent could pretend to speak for
//     (the catalog has no subnet or zone ids; roles, domains and strategies
//     describe an agent rather than an authority, so they stay free);
//   - a name in authoritySlugs.
//
// A reserved slug is 409 slug_reserved; a generated slug steps over it like over
// a taken one. Slugs are lower case only (publicIDPattern), so "Genesis" is
// already 400 and needs no case-folding here. The chain is history: an identity
// that took such a slug before it was reserved keeps it; the rule applies to new
// claims only.

// authoritySlugs name the node, its operator and the offices of the game.
// "genesis" is the game's home subnet, governed by default, and stays reserved
// on a node that governs others, so it can govern it later.
var authoritySlugs = []string{
	"admin", "administrator", "authority", "bank", "central-bank", "civnode", "council",
	"genesis", "governance", "government", "governor", "moderator", "node", "observer",
	"official", "operator", "oracle", "owner", "planetary-government", "registry", "root",
	"staff", "support", "sysadmin", "system", "treasury",
}

// reservedSlug returns why slug may not be claimed by a, or "" if it may.
func (c *Identity) reservedSlug(a Actor, slug string) string {
	if slices.Contains(c.governed, slug) || slices.Contains(a.Governs, slug) {
		return "it is the id of a subnet this node governs"
	}
	if slices.Contains(c.catalog.FactionIDs(), slug) {
		return "it is a faction of the game catalog"
	}
	if slices.Contains(authoritySlugs, slug) {
		return "it names an authority of the node or the game"
	}
	return ""
}

// checkSlugClaim refuses a new claim of a reserved slug: 409 slug_reserved.
func (c *Identity) checkSlugClaim(a Actor, slug string) error {
	if why := c.reservedSlug(a, slug); why != "" {
		return Conflict("slug_reserved", "public_id", "public_id %s is reserved: %s", slug, why)
	}
	return nil
}
