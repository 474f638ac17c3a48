"""The neardup-scrapy example project: a spider over a bundled demo site served locally."""
