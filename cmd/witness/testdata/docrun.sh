# Sourced by the doc_*.txtar scripts (CONTRIBUTING.md, "Output in the docs").
#
# show LINE [CMD]: print "$ LINE" as a console block shows the command, then
# run CMD (LINE itself when not given) with its stderr into stdout, so that
# what it prints comes in the order a terminal shows it. CMD is for what the
# block says it leaves out (a filter the doc names) or for setup steps the
# script does its own way (make build: witness is on PATH already).
show() {
	printf '$ %s\n' "$1"
	eval "${2-$1}" 2>&1
}
