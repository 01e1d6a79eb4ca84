package commands

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"io"
	"slices"
	"sync"

	"github.com/civnode/civnode/commands/catalog"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// IdentityReader finds identities. Identity commands read it only inside
// eventlog.Log.Decide, so it must be a decision model: a projection fed by
// eventlog.Options.OnSequenced, which has seen every decision made before.
type IdentityReader interface {
	IdentityByDID(did string) (events.IdentityRef, bool, error)
	IdentityBySlug(publicID string) (events.IdentityRef, bool, error)
}

// ControllerReader finds who is actively bound to a controller. Like
// IdentityReader it must be a decision model.
type ControllerReader interface {
	// ActiveBindingsByRef returns the active bindings whose controller_ref is ref.
	ActiveBindingsByRef(ref string) ([]events.ControllerBindingUpdated, error)
}

// IdentityOptions configures NewIdentity. Every field but Rand and Catalog is
// required.
type IdentityOptions struct {
	// Log is the chain the commands append to.
	Log *eventlog.Log
	// NodeKey is the node's Ed25519 key, the one Log signs with; nil on a
	// mirror's log (eventlog.Log.ReadOnly). Agent keys are
	// derived from it (AgentKey) and it signs the node's controller binding proof.
	NodeKey ed25519.PrivateKey
	// Identities and Controllers are the decision model (usually one
	// *projections.Identities fed by OnSequenced).
	Identities  IdentityReader
	Controllers ControllerReader
	// Rand supplies key salts; default crypto/rand.Reader.
	Rand io.Reader
	// Catalog supplies the accepted factions, roles and strategies of profiles;
	// default catalog.Default().
	Catalog *catalog.Catalog
	// Governs are the subnets this node governs (--governs); their ids are
	// reserved as slugs for every token (identity_reserved.go).
	Governs []string
}

// Identity runs the identity and civilization commands: bootstrap, and the
// upserts of public identity, controller binding and profile. Every change is an
// event decided on the log's sequencer (eventlog.Log.Decide), so uniqueness of
// slugs and exclusive controllers is checked against every earlier decision and two
// conflicting commands never both succeed.
type Identity struct {
	log         *eventlog.Log
	key         ed25519.PrivateKey
	ids         IdentityReader
	controllers ControllerReader
	rand        io.Reader
	catalog     *catalog.Catalog

	nodeBinding func() (NodeBinding, error)
	randMu      sync.Mutex // io.Reader implementations need not be safe for concurrent use
	// governed are the subnets this node governs, reserved as slugs.
	governed []string
}

// NewIdentity checks opts and returns the command set.
func NewIdentity(opts IdentityOptions) (*Identity, error) {
	switch {
	case opts.Log == nil:
		return nil, errors.New("identity commands: Log is nil")
	case opts.NodeKey == nil && opts.Log.ReadOnly():
		// A mirror's: the log refuses every write, and the commands that
		// sign with the key answer eventlog.ErrReadOnly.
	case len(opts.NodeKey) != ed25519.PrivateKeySize:
		return nil, errors.New("identity commands: NodeKey is missing")
	case !bytes.Equal(opts.NodeKey.Public().(ed25519.PublicKey), opts.Log.PublicKey()):
		// Agent DIDs derived from another key would not survive a restart with
		// the right one.
		return nil, errors.New("identity commands: NodeKey is not the key of Log")
	case opts.Identities == nil || opts.Controllers == nil:
		return nil, errors.New("identity commands: the decision model is missing")
	}
	if opts.Rand == nil {
		opts.Rand = rand.Reader
	}
	if opts.Catalog == nil {
		opts.Catalog = catalog.Default()
	}
	c := &Identity{log: opts.Log, key: opts.NodeKey, ids: opts.Identities,
		controllers: opts.Controllers, rand: opts.Rand, catalog: opts.Catalog,
		governed: slices.Clone(opts.Governs)}
	c.nodeBinding = sync.OnceValues(c.signNodeBinding)
	return c, nil
}

// NodeDID is the DID of the node the commands run on.
func (c *Identity) NodeDID() string { return c.log.NodeDID() }

// lookup finds the identity named by agentDID in the decision model and checks
// that a may act for it: 404 identity_not_found, then 403 forbidden.
func (c *Identity) lookup(a Actor, agentDID string) (events.IdentityRef, error) {
	id, ok, err := c.ids.IdentityByDID(agentDID)
	if err != nil {
		return events.IdentityRef{}, err
	}
	if !ok {
		return events.IdentityRef{}, NotFound("identity_not_found", "agent_did", "no identity has agent_did %s", agentDID)
	}
	if err := RequireActsFor(a, c.log.NodeDID(), id); err != nil {
		return events.IdentityRef{}, err
	}
	return id, nil
}

// firstEvent returns the only event of a one-event decision.
func firstEvent(evs []eventlog.Event) eventlog.Event {
	if len(evs) == 0 {
		return eventlog.Event{}
	}
	return evs[0]
}
