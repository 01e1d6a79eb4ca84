package commands_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog/events"
)

func TestBootstrapAppendsIdentityAndProfileAsOneUnit(t *testing.T) {
	n := newIDNode(t)
	before := n.log.Tip().Seq
	res, err := n.cmd.Bootstrap(context.Background(), owner, commands.BootstrapInput{
		DisplayName: "Ada Lovelace", Faction: ptr("order"), Role: ptr("archivist"), Strategy: ptr("cautious"),
		HomeSubnetID: ptr("genesis"), HomeZoneID: ptr("z-1"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.PublicID != "ada-lovelace" || len(res.Events) != 2 {
		t.Fatalf("result = %+v", res)
	}
	boot, prof := res.Events[0], res.Events[1]
	if boot.Type != events.TypeIdentityBootstrapped || prof.Type != events.TypeProfileUpdated ||
		boot.Seq != before+1 || prof.Seq != before+2 {
		t.Fatalf("events %s@%d %s@%d, want bootstrapped then profile right after seq %d", boot.Type, boot.Seq, prof.Type, prof.Seq, before)
	}
	var bp events.IdentityBootstrapped
	if err := json.Unmarshal(boot.Payload, &bp); err != nil {
		t.Fatal(err)
	}
	did, err := commands.AgentDID(n.key, bp.KeySalt)
	if err != nil || did != res.AgentDID || bp.AgentDID != did || bp.PublicID != "ada-lovelace" || bp.DisplayName != "Ada Lovelace" {
		t.Fatalf("payload %+v does not match result %+v (derived %s, %v)", bp, res, did, err)
	}
	if len(bp.KeySalt) != 32 {
		t.Errorf("key_salt %q is not 16 bytes of hex", bp.KeySalt)
	}
	wantProfile := `{"agent_did":"` + did + `","faction":"order","home_subnet_id":"genesis","home_zone_id":"z-1","role":"archivist","strategy":"cautious"}`
	if string(prof.Payload) != wantProfile {
		t.Errorf("profile payload = %s\n want %s", prof.Payload, wantProfile)
	}
	// Unset optional fields are JSON null.
	res2 := n.bootstrap("Bare")
	var raw map[string]any
	json.Unmarshal(res2.Events[1].Payload, &raw)
	for _, k := range []string{"faction", "role", "strategy", "home_subnet_id", "home_zone_id"} {
		if v, ok := raw[k]; !ok || v != nil {
			t.Errorf("profile %s = %v (present %v), want null", k, v, ok)
		}
	}
	if res2.AgentDID == res.AgentDID {
		t.Error("two identities share a DID")
	}
}

func TestBootstrapGeneratesUniqueSlugs(t *testing.T) {
	n := newIDNode(t)
	long := strings.Repeat("Long name ", 6) // "long-name-long-name-long-name-long-name-" → 39 chars trimmed
	for _, tc := range []struct{ name, want string }{
		{"Ada Lovelace", "ada-lovelace"},
		{"ada lovelace", "ada-lovelace-2"},
		{"ADA--LOVELACE!", "ada-lovelace-3"},
		{"日本", "agent"},
		{"中国", "agent-2"},
		{"Al", "al-agent"},
		{long, "long-name-long-name-long-name-long-name"},
		{long, "long-name-long-name-long-name-long-nam-2"},
	} {
		if got := n.bootstrap(tc.name).PublicID; got != tc.want {
			t.Errorf("bootstrap %q: public_id %q, want %q", tc.name, got, tc.want)
		}
	}
	// A generated slug skips one taken explicitly.
	n.bootstrap("Taken", "grace-hopper")
	n.bootstrap("Taken too", "grace-hopper-2")
	if got := n.bootstrap("Grace Hopper").PublicID; got != "grace-hopper-3" {
		t.Errorf("public_id %q, want grace-hopper-3", got)
	}
}

func TestBootstrapRefusals(t *testing.T) {
	n := newIDNode(t)
	n.bootstrap("Existing", "taken-slug")
	agent := agentActor(n.bootstrap("Agent").AgentDID)
	valid := func(edit func(*commands.BootstrapInput)) commands.BootstrapInput {
		in := commands.BootstrapInput{DisplayName: "Valid"}
		edit(&in)
		return in
	}
	for _, tc := range []struct {
		name  string
		actor commands.Actor
		in    commands.BootstrapInput
		kind  commands.Kind
		code  string
		field string
	}{
		{"agent token", agent, valid(func(*commands.BootstrapInput) {}), commands.KindForbidden, "forbidden", ""},
		{"observer token", observer, valid(func(*commands.BootstrapInput) {}), commands.KindForbidden, "forbidden", ""},
		{"no display name", owner, commands.BootstrapInput{}, commands.KindInvalid, "missing_field", "display_name"},
		{"long display name", owner, valid(func(in *commands.BootstrapInput) { in.DisplayName = strings.Repeat("x", 65) }), commands.KindInvalid, "invalid_field", "display_name"},
		{"control character", owner, valid(func(in *commands.BootstrapInput) { in.DisplayName = "a\x1bb" }), commands.KindInvalid, "invalid_field", "display_name"},
		{"slug too short", owner, valid(func(in *commands.BootstrapInput) { in.PublicID = ptr("ab") }), commands.KindInvalid, "invalid_field", "public_id"},
		{"slug too long", owner, valid(func(in *commands.BootstrapInput) { in.PublicID = ptr(strings.Repeat("a", 41)) }), commands.KindInvalid, "invalid_field", "public_id"},
		{"slug upper case", owner, valid(func(in *commands.BootstrapInput) { in.PublicID = ptr("Ada") }), commands.KindInvalid, "invalid_field", "public_id"},
		{"slug empty", owner, valid(func(in *commands.BootstrapInput) { in.PublicID = ptr("") }), commands.KindInvalid, "invalid_field", "public_id"},
		{"slug taken", owner, valid(func(in *commands.BootstrapInput) { in.PublicID = ptr("taken-slug") }), commands.KindConflict, "slug_taken", "public_id"},
		{"faction", owner, valid(func(in *commands.BootstrapInput) { in.Faction = ptr("empire") }), commands.KindInvalid, "invalid_field", "faction"},
		{"role", owner, valid(func(in *commands.BootstrapInput) { in.Role = ptr("king") }), commands.KindInvalid, "invalid_field", "role"},
		{"strategy", owner, valid(func(in *commands.BootstrapInput) { in.Strategy = ptr("") }), commands.KindInvalid, "invalid_field", "strategy"},
		{"home subnet", owner, valid(func(in *commands.BootstrapInput) { in.HomeSubnetID = ptr("Genesis") }), commands.KindInvalid, "invalid_field", "home_subnet_id"},
		{"home zone", owner, valid(func(in *commands.BootstrapInput) {
			in.HomeSubnetID = ptr("genesis")
			in.HomeZoneID = ptr(strings.Repeat("z", 65))
		}), commands.KindInvalid, "invalid_field", "home_zone_id"},
		{"zone without subnet", owner, valid(func(in *commands.BootstrapInput) { in.HomeZoneID = ptr("z") }), commands.KindInvalid, "invalid_field", "home_zone_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tip := n.log.Tip().Seq
			_, err := n.cmd.Bootstrap(context.Background(), tc.actor, tc.in)
			n.refused(t, err, tip, tc.kind, tc.code, tc.field)
		})
	}
}

func TestConcurrentBootstrapsOfOneSlug(t *testing.T) {
	n := newIDNode(t)
	const clients = 16
	var wg sync.WaitGroup
	errs := make([]error, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = n.cmd.Bootstrap(context.Background(), owner,
				commands.BootstrapInput{DisplayName: "Racer", PublicID: ptr("the-one")})
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		var ce *commands.Error
		switch {
		case err == nil:
			ok++
		case errors.As(err, &ce) && ce.Code == "slug_taken":
		default:
			t.Errorf("unexpected error %v", err)
		}
	}
	if count := must(n.read.Count()); ok != 1 || count != 1 {
		t.Fatalf("%d bootstraps succeeded and %d identities exist, want exactly 1", ok, count)
	}
	// Generated slugs under contention stay unique too.
	errs = make([]error, clients)
	slugs := make([]string, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var res commands.BootstrapResult
			res, errs[i] = n.cmd.Bootstrap(context.Background(), owner, commands.BootstrapInput{DisplayName: "Crowd"})
			slugs[i] = res.PublicID
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, err := range errs {
		if err != nil || seen[slugs[i]] {
			t.Fatalf("bootstrap %d: %q, %v", i, slugs[i], err)
		}
		seen[slugs[i]] = true
	}
}
