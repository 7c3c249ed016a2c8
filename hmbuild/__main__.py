from hmbuild.cli import main

main()
