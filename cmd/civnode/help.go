package main

import _ "embed" // the commands' long help

// The long help of each command is prose, kept in help/<command>.txt, where it
// reads and diffs as the text a user sees; embedded at build time, so a
// missing file fails the build.
var (
	//go:embed help/backup.txt
	backupHelp string

	//go:embed help/bench.txt
	benchHelp string

	//go:embed help/civnode.txt
	rootHelp string

	//go:embed help/doctor.txt
	doctorHelp string

	//go:embed help/export.txt
	exportHelp string

	//go:embed help/import.txt
	importHelp string

	//go:embed help/man.txt
	manHelp string

	//go:embed help/mirror.txt
	mirrorHelp string

	//go:embed help/oracle.txt
	oracleHelp string

	//go:embed help/oracle-balance.txt
	oracleBalanceHelp string

	//go:embed help/oracle-publish.txt
	oraclePublishHelp string

	//go:embed help/oracle-pull.txt
	oraclePullHelp string

	//go:embed help/oracle-subscribe.txt
	oracleSubscribeHelp string

	//go:embed help/promote.txt
	promoteHelp string

	//go:embed help/registry-dev.txt
	registryDevHelp string

	//go:embed help/replay.txt
	replayHelp string

	//go:embed help/restore.txt
	restoreHelp string

	//go:embed help/serve.txt
	serveHelp string

	//go:embed help/state.txt
	stateHelp string

	//go:embed help/state-prove.txt
	stateProveHelp string

	//go:embed help/state-verify.txt
	stateVerifyHelp string

	//go:embed help/token.txt
	tokenHelp string

	//go:embed help/transparency.txt
	transparencyHelp string

	//go:embed help/transparency-check.txt
	transparencyCheckHelp string

	//go:embed help/transparency-prove.txt
	transparencyProveHelp string

	//go:embed help/transparency-publish.txt
	transparencyPublishHelp string

	//go:embed help/verify.txt
	verifyHelp string

	//go:embed help/version.txt
	versionHelp string

	//go:embed help/wallet.txt
	walletHelp string
)
