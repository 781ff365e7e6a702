"""The scenario language: files that write a scheduling situation down as data, their steps (each
parses and runs itself), and the run against a cluster."""
