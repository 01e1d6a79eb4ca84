package main

import "github.com/civnode/civnode/cmd/civnode/internal/localnode"

// notifyEnv names the service manager's notification socket (sd_notify(3)):
// systemd sets it for a unit of Type=notify.
const notifyEnv = "NOTIFY_SOCKET"

// notifyServiceManager sends state to the socket $NOTIFY_SOCKET names
// (localnode.Notify); without it, it does nothing.
func (m *Main) notifyServiceManager(state string) error {
	return localnode.Notify(m.Getenv(notifyEnv), state)
}
