package projections

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// The state map is what the node commits to with the state root of a
// state.committed event, so that one answer can be proved against a
// witnessed checkpoint without a replay: one entry per record a read route
// answers by id, keyed "<kind>/<id>", whose value is the RFC 8785 (JCS) form
// of the record exactly as that route answers it when the chain ends where
// the read models are. Every record is a pure function of the chain's events
// up to there: no route whose answer depends on the clock, on the node's
// configuration or on the caller has a kind, and none of the routes below
// redacts anything for any token that may call it (?public_id= answers the
// same record as ?agent_did=). The kinds, whose names are the constants
// below:
//
// | kind | key | value: the record of | absent when |
// |---|---|---|---|
// | identity | `identity/<agent_did>` | `GET /v1/civilization/public-identity?agent_did=` (its `stats` are the agent's credit, reputation, capacity and missions completed) | no identity has the DID |
// | binding | `binding/<agent_did>` | `GET /v1/civilization/controller-binding?agent_did=` | the identity never had a binding (404) |
// | profile | `profile/<agent_did>` | `GET /v1/civilization/profile?agent_did=` | no identity has the DID |
// | mission | `mission/<mission_id>` | `GET /v1/core/missions/{mission_id}` | no mission has the id |
// | treasury | `treasury/<subnet_id>` | the member `missions.treasuries.<subnet_id>` of `GET /v1/civilization/metrics`: a JSON integer | no settlement has paid the subnet's treasury (a treasury paid 0 exists) |
//
// Left out, and why:
//   - a subnet's identity counts: no route answers a subnet by id; the one
//     object that shows them, home_subnet of GET /v1/supervision/home, also
//     says whether this node governs the subnet (--governs, node-local) and
//     carries the agent's zone;
//   - the game's installations: GET /v1/game/starter-missions and
//     /v1/game/mission-pack answer with the node's catalog (--catalog) and no
//     route answers a pack by id;
//   - registry receipts and x402 payments: no route answers them from the
//     chain (the task route asks the registry);
//   - oracle feeds and subscriptions: no route serves them;
//   - GET /v1/state's balance: the node's own, summed over the subnets it
//     governs (--governs).
//
// Nothing deletes a record today (identities, missions, bindings and
// treasuries, once they exist, stay), but the map allows it: a key
// AppendStateKeys names whose value is then absent is a deletion.
const (
	StateKindIdentity = "identity"
	StateKindBinding  = "binding"
	StateKindProfile  = "profile"
	StateKindMission  = "mission"
	StateKindTreasury = "treasury"
)

// StateKey is the state map key of the record of kind with id: "<kind>/<id>".
func StateKey(kind, id string) string { return kind + "/" + id }

// SplitStateKey splits a state map key into its kind and id at the first '/'
// (an id may hold more of them; none of the node's do). ok is false for a key
// without one.
func SplitStateKey(key string) (kind, id string, ok bool) {
	return strings.Cut(key, "/")
}

// StateKeys returns the keys of the state map entries ev can change, in no
// particular order: what AppendStateKeys appends to nil.
func StateKeys(ev *eventlog.Event) ([]string, error) { return AppendStateKeys(nil, ev) }

// AppendStateKeys appends to dst the keys of the state map entries ev can
// change: a new entry, a changed one, or one that stops existing (a caller
// reads each key's value again, StateView.Value, and an absent value is a
// deletion). It is a pure function of the event's type and payload, and
// names every entry the event changes, and maybe more: a key is named even
// when the fold then refuses the event. An event of a type no state map record depends on names
// nothing.
//
// Per type (the kinds above):
//
//	identity.bootstrapped        identity/<agent_did>, profile/<agent_did>
//	identity.updated             identity/<agent_did>
//	controller_binding.updated   identity/<agent_did>, binding/<agent_did>
//	profile.updated              profile/<agent_did>
//	mission.created, .accepted,
//	  .completed, .settled       mission/<mission_id>
//	payment.settled              identity/<to_did>, treasury/<treasury>
//	  (with a mission_id)
//	oracle.settled               identity/<subscriber_did>, identity/<publisher_did>
//
// A claim (mission.accepted) changes only the claimer's recent events, which
// no record shows, and a payment only its mission's internal fields (paid,
// event_ids), which the mission record does not show either.
//
// The payload is decoded once, into just the members the type's keys need;
// an event appended in this process whose fold was handed its decoded
// payload (eventlog.Draft.Decoded, mission.created) is not decoded at all.
// A payload whose members the keys need do not decode (not JSON, or one of
// them of another JSON type) is an error, with dst as it was: every fold that
// makes a record of the map decodes the same members and refuses the event,
// so it changes no entry, and a caller may count it and go on. No command
// writes such an event.
func AppendStateKeys(dst []string, ev *eventlog.Event) ([]string, error) {
	switch ev.Type {
	case events.TypeIdentityBootstrapped:
		did, err := agentDIDOf(ev)
		if err != nil {
			return dst, err
		}
		return append(dst, StateKey(StateKindIdentity, did), StateKey(StateKindProfile, did)), nil
	case events.TypeIdentityUpdated:
		did, err := agentDIDOf(ev)
		if err != nil {
			return dst, err
		}
		return append(dst, StateKey(StateKindIdentity, did)), nil
	case events.TypeControllerBindingUpdated:
		did, err := agentDIDOf(ev)
		if err != nil {
			return dst, err
		}
		return append(dst, StateKey(StateKindIdentity, did), StateKey(StateKindBinding, did)), nil
	case events.TypeProfileUpdated:
		did, err := agentDIDOf(ev)
		if err != nil {
			return dst, err
		}
		return append(dst, StateKey(StateKindProfile, did)), nil
	case events.TypeMissionCreated:
		if pl, ok := ev.Decoded().(events.MissionCreated); ok {
			return append(dst, StateKey(StateKindMission, pl.MissionID)), nil
		}
		return appendMissionKey(dst, ev)
	case events.TypeMissionAccepted, events.TypeMissionCompleted, events.TypeMissionSettled:
		return appendMissionKey(dst, ev)
	case events.TypePaymentSettled:
		var pl struct {
			MissionID string `json:"mission_id"`
			ToDID     string `json:"to_did"`
			Treasury  string `json:"treasury"`
		}
		if err := decodeStateFields(ev, &pl); err != nil {
			return dst, err
		}
		if pl.MissionID == "" {
			return dst, nil // an x402 receipt: the servicenet model's alone
		}
		return append(dst, StateKey(StateKindIdentity, pl.ToDID), StateKey(StateKindTreasury, pl.Treasury)), nil
	case events.TypeOracleSettled:
		var pl struct {
			SubscriberDID string `json:"subscriber_did"`
			PublisherDID  string `json:"publisher_did"`
		}
		if err := decodeStateFields(ev, &pl); err != nil {
			return dst, err
		}
		dst = append(dst, StateKey(StateKindIdentity, pl.SubscriberDID))
		if pl.PublisherDID != pl.SubscriberDID {
			dst = append(dst, StateKey(StateKindIdentity, pl.PublisherDID))
		}
		return dst, nil
	default:
		return dst, nil
	}
}

// agentDIDOf decodes the agent_did of an identity event.
func agentDIDOf(ev *eventlog.Event) (string, error) {
	var pl struct {
		AgentDID string `json:"agent_did"`
	}
	err := decodeStateFields(ev, &pl)
	return pl.AgentDID, err
}

// appendMissionKey appends the mission key of a mission event.
func appendMissionKey(dst []string, ev *eventlog.Event) ([]string, error) {
	var pl struct {
		MissionID string `json:"mission_id"`
	}
	if err := decodeStateFields(ev, &pl); err != nil {
		return dst, err
	}
	return append(dst, StateKey(StateKindMission, pl.MissionID)), nil
}

// decodeStateFields decodes the members of ev's payload that v names. Each
// struct it is given names only members its event type's payload has, with
// the same Go types, so it fails exactly when the folds' own decoding of
// those members would: a member of another type that happens to be in the
// payload cannot make it fail where the fold succeeds.
func decodeStateFields(ev *eventlog.Event, v any) error {
	if err := json.Unmarshal(ev.Payload, v); err != nil {
		return fmt.Errorf("state keys of %s at seq %d: %w", ev.Type, ev.Seq, err)
	}
	return nil
}
