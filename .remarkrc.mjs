// `npm run lint:links`: every relative link and `#anchor` in the repository's Markdown must
// resolve. `repository: false` checks local paths only: offline, and the same in a clone
// whatever its remote.
import path from 'node:path';
import remarkValidateLinks from 'remark-validate-links';

/**
 * remark-validate-links accepts a link that leaves the repository when its target happens to
 * exist on this machine (`../shared/…` beside a clone): dead in any other clone, so refused.
 */
function linksStayInRepository() {
  const external = /^(?:[a-z][a-z\d+.-]*:|\/\/|#|\/)/i;
  return (tree, file) => {
    const visit = (node) => {
      if (['link', 'image', 'definition'].includes(node.type) && !external.test(node.url)) {
        const target = path.resolve(file.cwd, file.dirname, decodeURI(node.url.split(/[?#]/)[0]));
        if (path.relative(file.cwd, target).startsWith('..')) {
          file.message(`Link leaves the repository: \`${node.url}\``, node);
        }
      }
      node.children?.forEach(visit);
    };
    visit(tree);
  };
}

export default {
  plugins: [[remarkValidateLinks, { repository: false }], linksStayInRepository],
};
