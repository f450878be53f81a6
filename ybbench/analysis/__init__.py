"""What is concluded from runs: a run's limits, `ybbench compare` (runs,
groups of runs and reproduces against a base: compare.py; its sides and the
history's spread: compare_groups.py; series, two sweeps, designs or scale
fits: compare_series.py), `ybbench history` (series of runs kept across
time: history.py; where a run's history page is: history_link.py), their
change points from Apache Otava (otava.py), and the CI gate (--fail-on:
compare_gate.py). Each computes and writes its JSON; the pages and charts
drawn from it are report/'s. Below experiments/ and report/: it imports only
run/, doctor/ and core/."""
