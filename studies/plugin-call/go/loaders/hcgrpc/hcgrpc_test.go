package hcgrpc_test

import (
	"testing"

	"bridgebench/plugincall/contract"
	_ "bridgebench/plugincall/loaders/hcgrpc"
	"bridgebench/plugincall/loaders/hcwire/hctest"
)

const server = "bridgebench/plugincall/servers/hcplugin"

func TestAnswers(t *testing.T) {
	hctest.CheckAnswers(t, "hcgrpc", contract.Config{"server": hctest.BuildServer(t, server)})
}

func TestCloseEndsProcess(t *testing.T) {
	hctest.CheckClose(t, "hcgrpc", contract.Config{"server": hctest.BuildServer(t, server)})
}

func TestKilledPluginFails(t *testing.T) {
	hctest.CheckKill(t, "hcgrpc", contract.Config{"server": hctest.BuildServer(t, server)})
}

func TestLongTempDirIsAnError(t *testing.T) {
	hctest.CheckLongTempDir(t, "hcgrpc", contract.Config{"server": hctest.BuildServer(t, server)})
}

func TestNoServer(t *testing.T) {
	if _, err := contract.Open("hcgrpc", contract.Config{}); err == nil {
		t.Fatal("open without a server binary: no error")
	}
}
