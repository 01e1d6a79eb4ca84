// Package catalog is the game catalog: the versioned content that says which
// stages, roles, factions, strategies and domains exist, which mission templates
// the game can publish, and which of them form the starter set and each mission
// pack. One catalog is built into the binary (default.json: [Default], its bytes
// [DefaultJSON]); an operator may run a node with their own file instead
// (civnode serve --catalog FILE).
// docs/game.md is the operator's guide to the format.
//
// # Format
//
// A catalog is one JSON object with exactly these keys, all required:
//
//	version            string, 1..64 of [0-9A-Za-z.+-], starting with a letter or digit
//	stages             [{id, title, description}], in the order an agent passes them
//	roles              [{id, title, description, focus_domains: [domain id]}]
//	factions           [{id, title, description}]
//	strategies         [{id, title, description}]
//	domains            [{id, title, description}]
//	mission_templates  [{id, title, description, domain, required_role, required_faction,
//	                     reward: {agent_credit, reputation, capacity, treasury_share_credit},
//	                     payload, sets: ["starter" | "pack:<mission pack id>"]}]
//	mission_packs      [{id, title, description, default}]
//	starter_missions   [mission template id], in the order they are offered
//
// # Rules
//
// Parse refuses a file that breaks any of these, naming the JSON path of the first
// problem (mission_templates[3].required_role: "pilot" is not a role):
//
//   - The file is UTF-8 JSON of at most MaxSize bytes, nested at most 32 deep, with
//     no key repeated within an object and nothing after the top-level object.
//   - Every object has only the fields listed above; every field is required except
//     required_role and required_faction (null or left out: anyone may claim),
//     payload (an object; {} when left out) and default (false when left out).
//   - Every list above holds at least one item.
//   - Every id is 2..40 characters of a-z, 0-9 and -, and unique within its kind.
//   - title is 1..200 characters without control characters; description is 1..4000
//     characters without control characters other than newline; neither may be
//     only white space.
//   - Every reference resolves: focus_domains and domain to domains, required_role
//     to roles, required_faction to factions, "pack:<id>" sets to mission_packs,
//     starter_missions to mission_templates. Lists of references hold no repeats.
//   - Every reward amount is an integer from 0 to MaxReward (10^12), written
//     without a fraction or exponent.
//   - A payload is at most MaxPayload (64 KiB) encoded, and holds no number
//     beyond the range of a 64-bit float.
//   - Exactly one mission pack has "default": true, and every pack has at least one
//     template.
//   - starter_missions lists exactly the templates whose sets include "starter".
//
// Kinds are checked in dependency order (domains, factions, strategies, stages,
// roles, mission_packs, mission_templates, starter_missions), so a reference is
// checked where it appears.
//
// A template's sets name the starter set ([SetStarter]) and the packs
// ([PackSet]).
//
// A parsed Catalog is immutable by convention and shared by the whole node. Its
// JSON encoding is the file format again, with payload keys sorted, so the
// catalog a node serves (GET /v1/game/catalog) is a valid file.
package catalog
