package main

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/civnode/civnode/cmd/civnode/internal/admin"
	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
)

// owner is what the commands that act as the owner of a data dir's node
// share (token, wallet, backup): --data-dir, and --addr for when the node
// runs and its control socket cannot be reached.
type owner struct {
	m       *Main
	g       *globals
	dataDir string
	addr    string
	caFile  string // --ca-file, for an https:// --addr
}

// addrHelp is the help of --addr of the owner's commands.
const addrHelp = "address HOST:PORT (or https://HOST:PORT) of the node running on --data-dir, used when its control.sock cannot be reached"

func (o *owner) flags(f *pflag.FlagSet) {
	f.StringVar(&o.dataDir, "data-dir", "", datadir.Help)
	f.StringVar(&o.addr, "addr", "127.0.0.1:7777", addrHelp)
	f.StringVar(&o.caFile, "ca-file", "", localnode.CAFileHelp)
}

// with runs do as the owner of the data dir (admin.Open): against the
// running node's admin endpoints if one runs, else on the data dir itself.
func (o *owner) with(ctx context.Context, do func(context.Context, *admin.Owner) error) (err error) {
	logger, err := o.m.logger(o.g)
	if err != nil {
		return err
	}
	dir, err := datadir.Resolve(o.dataDir, o.m.Getenv, o.m.HomeDir)
	if err != nil {
		return err
	}
	a, err := admin.Open(ctx, dir, o.addr, logger, localnode.WithCAFile(o.caFile))
	if err != nil {
		return err
	}
	defer func() {
		if cerr := a.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	return do(ctx, a)
}
