# Sourced by the doc_*.txtar scripts (CONTRIBUTING.md, "Output in the docs").
#
# show LINE [CMD]: print "$ LINE" as a console block shows the command, then
# run CMD (LINE itself when not given) with its stderr into stdout, so that
# what it prints comes in the order a terminal shows it. CMD is for what the
# block says it leaves out (a filter the doc names) or for setup steps the
# script does its own way (make build: witness is on PATH already). $? is
# kept across show, so that a block's `$ echo $?` shows the previous
# command's status.
show() {
	local rc=$?
	printf '$ %s\n' "$1"
	(exit "$rc")
	eval "${2-$1}" 2>&1
}
