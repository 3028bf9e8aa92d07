from runplan.cli.app import main

main()
