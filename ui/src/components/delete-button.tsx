/** Deleting a workload or placement from its page: asks in place, then goes back to the list. */
import { enc } from '../api.js';
import { useAction } from '../hooks.js';
import { navigate } from '../router.js';
import { api } from '../store.js';
import { ConfirmButton } from './confirm.js';
import { ErrorBox } from './error-box.js';

export function DeleteButton(props: {
  project: string;
  kind: 'workloads' | 'placements';
  name: string;
  warning: string;
}) {
  const act = useAction();
  return (
    <>
      <ConfirmButton
        label="Delete"
        confirm={props.warning}
        confirmLabel="Delete"
        danger
        busy={act.busy}
        onConfirm={() =>
          act.run(async () => {
            await api.delete(`/api/v1/projects/${enc(props.project)}/${props.kind}/${enc(props.name)}`);
            navigate(`/${props.kind}`);
          })
        }
      />
      <ErrorBox error={act.error} />
    </>
  );
}
