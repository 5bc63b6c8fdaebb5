package report

import (
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/verify"
)

// Build reads the inputs and returns the report's data. It fails (with an
// exitcode error) only when nothing can be shown: no log, a log that
// cannot be opened, an unusable seal or key set. Evidence that is tampered
// with or incomplete is reported, not refused.
//
// The stages: check the inputs; verify the run (with one log, the page's
// first pass and the graph stream ride on verify's read: verifyRun); then
// one log is reported from streams (buildSingle), several from their
// events in memory (buildRun); both end in graphParts and finish.
func Build(o Options) (*Data, error) {
	o.defaults()
	if err := checkInputs(o); err != nil {
		return nil, err
	}
	loaded, sealed := loadSeal(&o)
	d := &Data{Format: format, V: 1, Generated: o.Generated, Version: o.Version}
	lanes := newInterner()
	kinds := newInterner()
	labels := newInterner()
	for _, l := range []string{"user", "agent", "model"} {
		lanes.id(l)
	}
	runRep, fp, cs, err := verifyRun(o, loaded, sealed, kinds, labels)
	if err != nil {
		return nil, err
	}
	if len(o.Events) == 1 {
		return buildSingle(o, d, lanes, kinds, labels, runRep, fp, cs)
	}
	return buildRun(o, d, lanes, kinds, labels, runRep)
}

// checkInputs refuses, before any work, inputs that cannot be read.
func checkInputs(o Options) error {
	if len(o.Events) == 0 {
		return exitcode.New(exitcode.Usage, errors.New("no event log given"), "pass --events FILE (repeat it for several logs)")
	}
	for _, f := range o.Events {
		if err := checkInput(f, "--events"); err != nil {
			return err
		}
	}
	if o.FirewallAudit != "" {
		return checkInput(o.FirewallAudit, "--firewall-audit")
	}
	return nil
}

// loadSeal reads the seal of a single log once (verify judges against the
// same bytes, LoadedSeal); with a seal verify can use, the log's graph has
// it as its plan (o.graphOpts) and sealed is true.
func loadSeal(o *Options) (loaded *verify.SealFile, sealed bool) {
	if o.Verify.SealFile == "" || len(o.Events) != 1 {
		return nil, false
	}
	sf, err := verify.LoadSeal(o.Verify.SealFile, o.Verify.SealKeys)
	if err != nil {
		return nil, false
	}
	if sf.Sealed != nil {
		o.graphOpts = verify.GraphOptionsFor(verify.PlanFromSeal(sf.Sealed))
		sealed = true
	}
	return sf, sealed
}

// verifyRun gives the run's verdict: one verification of all the logs, as
// `witness verify --events A --events B` gives it. With one log, verify.Run
// reads and decodes it once and hands each event on (logTap) to the graph
// stream (cs, when the log is likely large), which maps the log while it
// is verified, and to the page's first pass (fp), which needs no verdict
// (the interners are the pass's alone until it ends).
func verifyRun(o Options, loaded *verify.SealFile, sealed bool, kinds, labels *interner) (*verify.Report, *firstPass, *compactStream, error) {
	runOpts := o.Verify
	runOpts.LoadedSeal = loaded
	runOpts.EventsFile = o.Events[0]
	runOpts.RunEvents = append([]string(nil), o.Events[1:]...)
	if len(o.Events) > 1 {
		rep, err := verify.Run(runOpts)
		return rep, nil, nil, err
	}
	var cs *compactStream
	var tap *logTap
	var fp *firstPass
	var passDone chan struct{}
	likely := compactLikely(o.Events[0], o)
	var feed *verify.EventFeed
	if !o.readsLog {
		tap = newLogTap(o.Events[0], likely)
		runOpts.Tap = tap.tap()
		feed = tap.stream
	}
	if likely {
		cs = startCompact(o.Events[0], feed, o)
		if o.Verify.SealFile == "" || sealed {
			// the stream's digest is verify's (the graph without a
			// seal, or with the seal as its plan): verify does not
			// stream the log a second time
			runOpts.NoGraphDigest = true
			cs.owesDigest = true
		}
	}
	if tap != nil {
		passDone = make(chan struct{})
		go func() {
			defer close(passDone)
			fp = firstFrom(tap.page, o, kinds, labels)
			tap.page.Drain()
		}()
	}
	runRep, err := verify.Run(runOpts)
	if tap != nil {
		tap.close()
		<-passDone
	}
	if err != nil {
		if cs != nil {
			cs.cancel()
		}
		return nil, nil, nil, err
	}
	if tap == nil || !tap.used {
		// verify did not read the log (a seal it could not use), or
		// the test says not to use what it read: the page reads the
		// log itself, and so does the stream
		fp = readFirst(o.Events[0], o, kinds, labels)
		if cs != nil && tap != nil {
			owes := cs.owesDigest
			cs.cancel()
			cs = startCompact(o.Events[0], nil, o)
			cs.owesDigest = owes
		}
	}
	return runRep, fp, cs, nil
}

// buildRun reports on the logs of one run. A joined run keeps its events
// and builds its graph in memory (graph.BuildRun needs every log's bytes);
// docs/design/report.md.
func buildRun(o Options, d *Data, lanes, kinds, labels *interner, runRep *verify.Report) (*Data, error) {
	logs, inputs, err := readRunLogs(o, d, runRep)
	if err != nil {
		return nil, err
	}
	// the run's findings, each with the log it is about (the seal's and
	// the run's own go with the first log, the model channel)
	for _, f := range runRep.Findings {
		li := 0
		for i, file := range o.Events {
			if f.File == file {
				li = i
				break
			}
		}
		logs[li].findings = append(logs[li].findings, f)
	}
	var run *runState
	if r, err := graph.BuildRun(inputs, graph.Options{}); err == nil {
		run = &runState{g: r.Graph, logs: r.Logs}
		// a server's lane is named by its log (LOGNAME: its folder)
		for li, ls := range logs {
			ls.server = r.Logs[li].Label
			d.Logs[li].Server = ls.server
		}
	} else if exitcode.Of(err) == exitcode.Usage {
		// the same log twice, or two logs of one session: not one run
		return nil, err
	} else {
		d.Notes = append(d.Notes, fmt.Sprintf("no causal graph: %v", err))
	}
	// lanes: user, agent, model, one per server that has events, effects,
	// witness
	for _, ls := range logs {
		for _, e := range ls.events {
			if laneKind(e) == "server" {
				lanes.id(laneOf(e, ls.server))
				break
			}
		}
	}
	lanes.id("effects")
	lanes.id("witness")
	runVerdict(d, logs, runRep)
	all := runTimeline(d, o, logs, lanes, kinds, labels)

	// findings, chains, counterfactuals
	detailRows := map[int]bool{}
	graphParts(d, o, logs, run, detailRows)

	laneOfEv := map[[2]any]int{}
	for li, ls := range logs {
		for _, e := range ls.events {
			laneOfEv[[2]any{li, e.ID}] = lanes.id(laneOf(e, ls.server))
		}
	}
	laneAt := func(li int, ev string, _ int) int { return laneOfEv[[2]any{li, ev}] }
	eventsAt := func(rows []int) ([]eventRef, error) {
		refs := make([]eventRef, len(rows))
		for i, r := range rows {
			refs[i] = all[r]
		}
		return refs, nil
	}
	if err := finish(d, o, logs, run, lanes, detailRows, eventsAt, laneAt); err != nil {
		return nil, err
	}
	d.Lanes, d.Kinds, d.Labels = lanes.list, kinds.list, labels.list
	return d, nil
}

// readRunLogs verifies each log of the run on its own (its chain,
// signatures, end), reads its events and adds its Log to d.
func readRunLogs(o Options, d *Data, runRep *verify.Report) ([]*logState, []graph.LogInput, error) {
	var logs []*logState
	var inputs []graph.LogInput
	sealedRun := o.Verify.SealFile != ""
	for _, file := range o.Events {
		vo := o.Verify
		vo.EventsFile, vo.SealFile, vo.RunEvents = file, "", nil
		rep, err := verify.Run(vo)
		if err != nil {
			return nil, nil, err
		}
		ls := &logState{file: file, rowOf: map[string]int{}, rep: rep}
		logs = append(logs, ls)
		lg := Log{File: file, Session: rep.Evidence.Session, Verdict: string(rep.Verdict), ExitCode: int(rep.Code()),
			Line: rep.VerdictLine(), Qualifiers: rep.Qualifiers, Seal: rep.Seal.Digest, Signers: rep.Seal.Signers, Provenance: rep.Evidence.Provenance}
		if sealedRun {
			// the log alone shows its integrity; the seal judged the run
			lg.Seal, lg.Signers, lg.Qualifiers = runRep.Seal.Digest, runRep.Seal.Signers, nil
			for _, q := range rep.Qualifiers {
				if q != verify.IntegrityOnly {
					lg.Qualifiers = append(lg.Qualifiers, q)
				}
			}
			lg.Qualifiers = append(lg.Qualifiers, "this log on its own: its integrity (hash chain, signed end); the seal's checks judge the run (the verdict above)")
		}
		for _, c := range rep.Checks {
			if sealedRun && c.Status == verify.StatusNotCheckable && c.Reason == verify.IntegrityOnly {
				continue
			}
			lg.Checks = append(lg.Checks, checkRow(c, rep.Findings))
		}
		evs, rerr := readEvents(file)
		ls.events = evs
		if rerr != nil {
			if exitcode.Of(rerr) == exitcode.Usage || exitcode.Of(rerr) == exitcode.Failure {
				return nil, nil, rerr
			}
			lg.ReadError = rerr.Error()
			d.Notes = append(d.Notes, fmt.Sprintf("%s: read %d events, then: %v", lg.File, len(evs), rerr))
		}
		for _, e := range evs {
			ls.effects = addEffect(ls.effects, e)
			if e.Header != nil && e.Header.Server != nil {
				ls.server = e.Header.Server.Name
			}
			if e.End != nil {
				for _, s := range e.End.Signatures {
					lg.EndSigned = append(lg.EndSigned, s.KeyID)
				}
			}
			if e.Wire != nil && e.Wire.Cassette != "" && lg.Cassette == "" {
				lg.Cassette = e.Wire.Cassette
			}
		}
		lg.Server = ls.server
		lg.Events = len(evs)
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, nil, exitcode.Input("read events", err, "check the path given to --events")
		}
		inputs = append(inputs, graph.LogInput{Name: file, Data: data})
		d.Logs = append(d.Logs, lg)
	}
	return logs, inputs, nil
}

// runVerdict is the run's verdict, or a log's own when that is worse, and
// the run's checks.
func runVerdict(d *Data, logs []*logState, runRep *verify.Report) {
	worst := runRep.Verdict
	for _, ls := range logs {
		if rank(ls.rep.Verdict) > rank(worst) {
			worst = ls.rep.Verdict
		}
	}
	for _, c := range runRep.Checks {
		d.RunChecks = append(d.RunChecks, checkRow(c, runRep.Findings))
	}
	d.Verdict = Verdict{Verdict: string(worst), ExitCode: int(worst.ExitCode()), Class: worst.ExitCode().Name(), Line: runRep.VerdictLine()}
	if worst != runRep.Verdict {
		d.Verdict.Line = fmt.Sprintf("%s: a log of the run is %s on its own; the run: %s", worst, worst, runRep.VerdictLine())
	}
}

// runTimeline fills the timeline of a run: the logs merged by time, then
// by log and position; it returns the events in row order.
func runTimeline(d *Data, o Options, logs []*logState, lanes, kinds, labels *interner) []eventRef {
	var all []eventRef
	for li, ls := range logs {
		for _, e := range ls.events {
			all = append(all, eventRef{li, e})
		}
	}
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.ev.TS != b.ev.TS {
			return a.ev.TS < b.ev.TS
		}
		if a.log != b.log {
			return a.log < b.log
		}
		return a.ev.Seq < b.ev.Seq
	})
	if len(all) > maxEventRows {
		d.Notes = append(d.Notes, fmt.Sprintf("the event list keeps the first %d of %d events; the timeline counts all of them", maxEventRows, len(all)))
	}
	findingEvents := map[string]bool{}
	for li, ls := range logs {
		for _, f := range ls.findings {
			if f.EventID != "" {
				findingEvents[fmt.Sprintf("%d/%s", li, f.EventID)] = true
			}
		}
	}
	d.Timeline.Total = len(all)
	for i, r := range all {
		lane := lanes.id(laneOf(r.ev, logs[r.log].server))
		if i >= maxEventRows {
			continue
		}
		var flags int64
		if findingEvents[fmt.Sprintf("%d/%s", r.log, r.ev.ID)] {
			flags |= 1
		}
		row := [6]int64{int64(r.log), r.ev.Seq, int64(lane), int64(kinds.id(string(r.ev.Kind))), int64(labels.id(eventLabel(r.ev))), flags}
		logs[r.log].rowOf[r.ev.ID] = i
		d.Timeline.Rows = append(d.Timeline.Rows, row)
	}
	if len(all) > o.MaxTimeline {
		size := (len(all) + o.Buckets - 1) / o.Buckets
		d.Timeline.Size = size
		nb := (len(all) + size - 1) / size
		d.Timeline.Buckets = make([][]int, len(lanes.list))
		for l := range d.Timeline.Buckets {
			d.Timeline.Buckets[l] = make([]int, nb)
		}
		for i, r := range all {
			d.Timeline.Buckets[lanes.id(laneOf(r.ev, logs[r.log].server))][i/size]++
		}
	}
	return all
}
