package commands_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog/events"
)

func TestUpdatePublicIdentity(t *testing.T) {
	n := newIDNode(t)
	ada := n.bootstrap("Ada", "ada")
	grace := n.bootstrap("Grace", "grace")
	ctx := context.Background()

	ev, err := n.cmd.UpdatePublicIdentity(ctx, owner, commands.PublicIdentityInput{
		AgentDID: ada.AgentDID, DisplayName: "Ada L.", PublicID: ptr("ada-l"), ModelProvider: ptr("local"),
		CapabilitiesGranted: []string{"missions.claim", "servicenet:invoke"}, WalletAdapter: ptr("x402-evm"),
		SubnetMemberships: []string{"genesis", "outer-rim"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"agent_did":"` + ada.AgentDID + `","capabilities_granted":["missions.claim","servicenet:invoke"],` +
		`"display_name":"Ada L.","model_provider":"local","public_id":"ada-l","subnet_memberships":["genesis","outer-rim"],"wallet_adapter":"x402-evm"}`
	if ev.Type != events.TypeIdentityUpdated || string(ev.Payload) != want {
		t.Fatalf("event %s %s\n want %s", ev.Type, ev.Payload, want)
	}
	if _, ok := found(n.read.IdentityBySlug("ada")); ok {
		t.Error("old slug still resolves")
	}
	// Full replace: what is left out becomes null or [], the slug stays.
	ev, err = n.cmd.UpdatePublicIdentity(ctx, agentActor(ada.AgentDID), commands.PublicIdentityInput{
		AgentDID: ada.AgentDID, DisplayName: "Ada"})
	if err != nil {
		t.Fatal(err)
	}
	want = `{"agent_did":"` + ada.AgentDID + `","capabilities_granted":[],"display_name":"Ada","model_provider":null,` +
		`"public_id":"ada-l","subnet_memberships":[],"wallet_adapter":null}`
	if string(ev.Payload) != want {
		t.Fatalf("payload %s\n want %s", ev.Payload, want)
	}
	// Keeping one's own slug is not a conflict; the freed slug can be taken.
	if _, err := n.cmd.UpdatePublicIdentity(ctx, owner, commands.PublicIdentityInput{
		AgentDID: ada.AgentDID, DisplayName: "Ada", PublicID: ptr("ada-l")}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.cmd.UpdatePublicIdentity(ctx, owner, commands.PublicIdentityInput{
		AgentDID: grace.AgentDID, DisplayName: "Grace", PublicID: ptr("ada")}); err != nil {
		t.Fatal(err)
	}

	unknown, _ := commands.AgentDID(n.key, "0123456789abcdef0123456789abcdef")
	in := func(edit func(*commands.PublicIdentityInput)) commands.PublicIdentityInput {
		v := commands.PublicIdentityInput{AgentDID: ada.AgentDID, DisplayName: "Ada"}
		edit(&v)
		return v
	}
	for _, tc := range []struct {
		name  string
		actor commands.Actor
		in    commands.PublicIdentityInput
		kind  commands.Kind
		code  string
		field string
	}{
		{"observer", observer, in(func(*commands.PublicIdentityInput) {}), commands.KindForbidden, "forbidden", ""},
		{"agent for another", agentActor(grace.AgentDID), in(func(*commands.PublicIdentityInput) {}), commands.KindForbidden, "forbidden", ""},
		{"no agent_did", owner, in(func(v *commands.PublicIdentityInput) { v.AgentDID = "" }), commands.KindInvalid, "missing_field", "agent_did"},
		{"bad agent_did", owner, in(func(v *commands.PublicIdentityInput) { v.AgentDID = "did:web:x" }), commands.KindInvalid, "invalid_field", "agent_did"},
		{"unknown agent_did", owner, in(func(v *commands.PublicIdentityInput) { v.AgentDID = unknown }), commands.KindNotFound, "identity_not_found", "agent_did"},
		{"node DID is not an identity", owner, in(func(v *commands.PublicIdentityInput) { v.AgentDID = n.log.NodeDID() }), commands.KindNotFound, "identity_not_found", "agent_did"},
		{"no display name", owner, in(func(v *commands.PublicIdentityInput) { v.DisplayName = "" }), commands.KindInvalid, "missing_field", "display_name"},
		{"slug taken", owner, in(func(v *commands.PublicIdentityInput) { v.PublicID = ptr("ada") }), commands.KindConflict, "slug_taken", "public_id"},
		{"bad slug", owner, in(func(v *commands.PublicIdentityInput) { v.PublicID = ptr("a_b") }), commands.KindInvalid, "invalid_field", "public_id"},
		{"empty model provider", owner, in(func(v *commands.PublicIdentityInput) { v.ModelProvider = ptr("") }), commands.KindInvalid, "invalid_field", "model_provider"},
		{"wallet adapter control", owner, in(func(v *commands.PublicIdentityInput) { v.WalletAdapter = ptr("a\nb") }), commands.KindInvalid, "invalid_field", "wallet_adapter"},
		{"duplicate capability", owner, in(func(v *commands.PublicIdentityInput) { v.CapabilitiesGranted = []string{"a", "a"} }), commands.KindInvalid, "invalid_field", "capabilities_granted"},
		{"empty capability", owner, in(func(v *commands.PublicIdentityInput) { v.CapabilitiesGranted = []string{""} }), commands.KindInvalid, "invalid_field", "capabilities_granted"},
		{"too many capabilities", owner, in(func(v *commands.PublicIdentityInput) {
			v.CapabilitiesGranted = strings.Split(strings.Repeat("c,", 65), ",")[:65]
		}), commands.KindInvalid, "invalid_field", "capabilities_granted"},
		{"bad subnet", owner, in(func(v *commands.PublicIdentityInput) { v.SubnetMemberships = []string{"Genesis"} }), commands.KindInvalid, "invalid_field", "subnet_memberships"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tip := n.log.Tip().Seq
			_, err := n.cmd.UpdatePublicIdentity(ctx, tc.actor, tc.in)
			n.refused(t, err, tip, tc.kind, tc.code, tc.field)
		})
	}
}

func TestControllerBinding(t *testing.T) {
	n := newIDNode(t)
	ctx := context.Background()
	a, b, c := n.bootstrap("A", "agent-a"), n.bootstrap("B", "agent-b"), n.bootstrap("C", "agent-c")
	bind := func(actor commands.Actor, did, ref string, edit ...func(*commands.ControllerBindingInput)) error {
		in := commands.ControllerBindingInput{AgentDID: did, ControllerKind: "local_model", ControllerRef: ref}
		for _, e := range edit {
			e(&in)
		}
		_, err := n.cmd.UpdateControllerBinding(ctx, actor, in)
		return err
	}
	shared := func(in *commands.ControllerBindingInput) { in.OwnershipScope = ptr("shared") }
	inactive := func(in *commands.ControllerBindingInput) { in.Active = ptr(false) }

	// Defaults: exclusive and active.
	ev, err := n.cmd.UpdateControllerBinding(ctx, owner, commands.ControllerBindingInput{
		AgentDID: a.AgentDID, ControllerKind: "local_model", ControllerRef: "gpu-1"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"active":true,"agent_did":"` + a.AgentDID + `","controller_kind":"local_model","controller_ref":"gpu-1","node_id":null,"ownership_scope":"exclusive"}`
	if ev.Type != events.TypeControllerBindingUpdated || string(ev.Payload) != want {
		t.Fatalf("event %s %s\n want %s", ev.Type, ev.Payload, want)
	}
	tip := n.log.Tip().Seq
	n.refused(t, bind(owner, b.AgentDID, "gpu-1"), tip, commands.KindConflict, "controller_ref_taken", "controller_ref")
	n.refused(t, bind(owner, b.AgentDID, "gpu-1", shared), tip, commands.KindConflict, "controller_ref_taken", "controller_ref")
	// An inactive binding to a taken ref holds nothing, so it is allowed.
	if err := bind(owner, b.AgentDID, "gpu-1", inactive); err != nil {
		t.Fatal(err)
	}
	// Rebinding the same agent to its own ref is no conflict.
	if err := bind(agentActor(a.AgentDID), a.AgentDID, "gpu-1", shared); err != nil {
		t.Fatal(err)
	}
	// Shared with shared is fine; exclusive against shared is not.
	if err := bind(owner, b.AgentDID, "gpu-1", shared); err != nil {
		t.Fatal(err)
	}
	tip = n.log.Tip().Seq
	n.refused(t, bind(owner, c.AgentDID, "gpu-1"), tip, commands.KindConflict, "controller_ref_taken", "controller_ref")
	// Once both release the ref it is free.
	if err := bind(owner, a.AgentDID, "gpu-2"); err != nil {
		t.Fatal(err)
	}
	if err := bind(owner, b.AgentDID, "gpu-1", inactive); err != nil {
		t.Fatal(err)
	}
	if err := bind(owner, c.AgentDID, "gpu-1"); err != nil {
		t.Fatal(err)
	}

	valid := func(edit func(*commands.ControllerBindingInput)) commands.ControllerBindingInput {
		in := commands.ControllerBindingInput{AgentDID: a.AgentDID, ControllerKind: "human_operator", ControllerRef: "desk-7"}
		edit(&in)
		return in
	}
	for _, tc := range []struct {
		name  string
		actor commands.Actor
		in    commands.ControllerBindingInput
		kind  commands.Kind
		code  string
		field string
	}{
		{"observer", observer, valid(func(*commands.ControllerBindingInput) {}), commands.KindForbidden, "forbidden", ""},
		{"agent for another", agentActor(b.AgentDID), valid(func(*commands.ControllerBindingInput) {}), commands.KindForbidden, "forbidden", ""},
		{"no kind", owner, valid(func(in *commands.ControllerBindingInput) { in.ControllerKind = "" }), commands.KindInvalid, "missing_field", "controller_kind"},
		{"bad kind", owner, valid(func(in *commands.ControllerBindingInput) { in.ControllerKind = "Local-Model" }), commands.KindInvalid, "invalid_field", "controller_kind"},
		{"no ref", owner, valid(func(in *commands.ControllerBindingInput) { in.ControllerRef = "" }), commands.KindInvalid, "missing_field", "controller_ref"},
		{"bad ref", owner, valid(func(in *commands.ControllerBindingInput) { in.ControllerRef = "a\tb" }), commands.KindInvalid, "invalid_field", "controller_ref"},
		{"bad scope", owner, valid(func(in *commands.ControllerBindingInput) { in.OwnershipScope = ptr("private") }), commands.KindInvalid, "invalid_field", "ownership_scope"},
		{"empty node id", owner, valid(func(in *commands.ControllerBindingInput) { in.NodeID = ptr("") }), commands.KindInvalid, "invalid_field", "node_id"},
		{"node id not a did", owner, valid(func(in *commands.ControllerBindingInput) { in.NodeID = ptr("not-a-did") }), commands.KindInvalid, "invalid_field", "node_id"},
		{"no agent", owner, valid(func(in *commands.ControllerBindingInput) { in.AgentDID = "" }), commands.KindInvalid, "missing_field", "agent_did"},
		{"taken ref", owner, valid(func(in *commands.ControllerBindingInput) { in.ControllerRef = "gpu-1" }), commands.KindConflict, "controller_ref_taken", "controller_ref"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tip := n.log.Tip().Seq
			_, err := n.cmd.UpdateControllerBinding(ctx, tc.actor, tc.in)
			n.refused(t, err, tip, tc.kind, tc.code, tc.field)
		})
	}
}

func TestConcurrentExclusiveBindings(t *testing.T) {
	n := newIDNode(t)
	const clients = 16
	dids := make([]string, clients)
	for i := range dids {
		dids[i] = n.bootstrap("Racer").AgentDID
	}
	var wg sync.WaitGroup
	errs := make([]error, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = n.cmd.UpdateControllerBinding(context.Background(), owner, commands.ControllerBindingInput{
				AgentDID: dids[i], ControllerKind: "remote_orchestrator", ControllerRef: "orchestrator-1"})
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		var ce *commands.Error
		switch {
		case err == nil:
			ok++
		case errors.As(err, &ce) && ce.Code == "controller_ref_taken":
		default:
			t.Errorf("unexpected error %v", err)
		}
	}
	if got := len(must(n.read.ActiveBindingsByRef("orchestrator-1"))); ok != 1 || got != 1 {
		t.Fatalf("%d bindings succeeded, %d active, want exactly 1", ok, got)
	}
}

func TestNoTokenActsForIdentitiesBoundElsewhere(t *testing.T) {
	n := newIDNode(t)
	ctx := context.Background()
	a := n.bootstrap("Wanderer")
	// Bound to this node explicitly: the owner still acts for it.
	if _, err := n.cmd.UpdateControllerBinding(ctx, owner, commands.ControllerBindingInput{AgentDID: a.AgentDID,
		ControllerKind: "local_model", ControllerRef: "r", NodeID: ptr(n.log.NodeDID())}); err != nil {
		t.Fatal(err)
	}
	// Handed to another node: from now on no token of this node acts for it
	// (identity_handoff_test.go).
	if _, err := n.cmd.UpdateControllerBinding(ctx, owner, commands.ControllerBindingInput{AgentDID: a.AgentDID,
		ControllerKind: "local_model", ControllerRef: "r", NodeID: ptr(otherNodeDID)}); err != nil {
		t.Fatal(err)
	}
	tip := n.log.Tip().Seq
	for _, actor := range []commands.Actor{owner, agentActor(a.AgentDID)} {
		_, err := n.cmd.UpdateProfile(ctx, actor, commands.ProfileInput{AgentDID: a.AgentDID, Faction: ptr("order")})
		n.refused(t, err, tip, commands.KindForbidden, "forbidden", "")
	}
}

func TestUpdateProfile(t *testing.T) {
	n := newIDNode(t)
	ctx := context.Background()
	a, b := n.bootstrap("A"), n.bootstrap("B")
	ev, err := n.cmd.UpdateProfile(ctx, agentActor(a.AgentDID), commands.ProfileInput{AgentDID: a.AgentDID,
		Faction: ptr("frontier"), Role: ptr("enforcer"), Strategy: ptr("aggressive"), HomeSubnetID: ptr("outer-rim")})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"agent_did":"` + a.AgentDID + `","faction":"frontier","home_subnet_id":"outer-rim","home_zone_id":null,"role":"enforcer","strategy":"aggressive"}`
	if ev.Type != events.TypeProfileUpdated || string(ev.Payload) != want {
		t.Fatalf("event %s %s\n want %s", ev.Type, ev.Payload, want)
	}
	unknown, _ := commands.AgentDID(n.key, "0123456789abcdef0123456789abcdef")
	for _, tc := range []struct {
		name  string
		actor commands.Actor
		in    commands.ProfileInput
		kind  commands.Kind
		code  string
		field string
	}{
		{"observer", observer, commands.ProfileInput{AgentDID: a.AgentDID}, commands.KindForbidden, "forbidden", ""},
		{"agent for another", agentActor(b.AgentDID), commands.ProfileInput{AgentDID: a.AgentDID}, commands.KindForbidden, "forbidden", ""},
		{"unknown", owner, commands.ProfileInput{AgentDID: unknown}, commands.KindNotFound, "identity_not_found", "agent_did"},
		{"missing", owner, commands.ProfileInput{}, commands.KindInvalid, "missing_field", "agent_did"},
		{"faction", owner, commands.ProfileInput{AgentDID: a.AgentDID, Faction: ptr("Order")}, commands.KindInvalid, "invalid_field", "faction"},
		{"role", owner, commands.ProfileInput{AgentDID: a.AgentDID, Role: ptr("pirate")}, commands.KindInvalid, "invalid_field", "role"},
		{"strategy", owner, commands.ProfileInput{AgentDID: a.AgentDID, Strategy: ptr("reckless")}, commands.KindInvalid, "invalid_field", "strategy"},
		{"zone alone", owner, commands.ProfileInput{AgentDID: a.AgentDID, HomeZoneID: ptr("z")}, commands.KindInvalid, "invalid_field", "home_zone_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tip := n.log.Tip().Seq
			_, err := n.cmd.UpdateProfile(ctx, tc.actor, tc.in)
			n.refused(t, err, tip, tc.kind, tc.code, tc.field)
		})
	}
}

// TestNodeBindingProof checks the JWS by hand: split, decode, verify with the key
// in the node's DID.
func TestNodeBindingProof(t *testing.T) {
	n := newIDNode(t)
	b, err := n.cmd.NodeBinding()
	if err != nil {
		t.Fatal(err)
	}
	did := n.log.NodeDID()
	if b.AgentDID != did || b.ControllerRef != did || b.NodeID != did || b.ControllerKind != "node" ||
		b.OwnershipScope != "exclusive" || !b.Active {
		t.Fatalf("binding = %+v", b)
	}
	genesis, _ := n.log.Event(1)
	if b.CreatedAt != genesis.Timestamp || b.UpdatedAt != genesis.Timestamp {
		t.Errorf("timestamps %s %s, want genesis %s", b.CreatedAt, b.UpdatedAt, genesis.Timestamp)
	}
	parts := strings.Split(b.Proof, ".")
	if len(parts) != 3 {
		t.Fatalf("proof %q is not compact JWS", b.Proof)
	}
	header, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	payload, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil {
		t.Fatal(err1, err2, err3)
	}
	if string(header) != `{"alg":"EdDSA","kid":"`+did+`"}` {
		t.Errorf("header %s", header)
	}
	want := `{"active":true,"agent_did":"` + did + `","controller_kind":"node","controller_ref":"` + did +
		`","created_at":"` + genesis.Timestamp + `","node_id":"` + did + `","ownership_scope":"exclusive","updated_at":"` + genesis.Timestamp + `"}`
	if string(payload) != want {
		t.Errorf("payload %s\n want %s", payload, want)
	}
	if !ed25519.Verify(n.log.PublicKey(), []byte(parts[0]+"."+parts[1]), sig) {
		t.Error("signature does not verify")
	}
	again, _ := n.cmd.NodeBinding()
	if again != b {
		t.Error("binding changes between calls")
	}
	var m map[string]any
	if err := json.Unmarshal(payload, &m); err != nil || m["proof"] != nil {
		t.Errorf("payload carries a proof: %s", payload)
	}
}

func TestNewIdentityRefusesBadWiring(t *testing.T) {
	n := newIDNode(t)
	other := ed25519.NewKeyFromSeed(make([]byte, 32))
	for name, opts := range map[string]commands.IdentityOptions{
		"no log":         {NodeKey: n.key, Identities: n.read.Decisions(), Controllers: n.read.Decisions()},
		"no key":         {Log: n.log, Identities: n.read.Decisions(), Controllers: n.read.Decisions()},
		"wrong key":      {Log: n.log, NodeKey: other, Identities: n.read.Decisions(), Controllers: n.read.Decisions()},
		"no model":       {Log: n.log, NodeKey: n.key, Controllers: n.read.Decisions()},
		"no controllers": {Log: n.log, NodeKey: n.key, Identities: n.read.Decisions()},
	} {
		if _, err := commands.NewIdentity(opts); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
